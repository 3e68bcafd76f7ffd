// /api/offices: offices, their members and pending invitations (SPEC's table and DECISIONS §13).
// Parse → one core call → `{ data }`.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Core } from '../core/index.js'
import {
  CreateOfficeInput, InviteBody, InviteParams, ListMembersQuery, ListOfficesQuery, MemberParams, OfficeIdParams, RoleBody, UpdateOfficeBody
} from '../core/offices/offices.types.js'
import { actorOf } from './identity.js'
import { Invite, Member, Office, created, list, noContent, ok } from './responses.js'

export function officeRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()
    const { offices, invites } = core

    r.get('/', { schema: { summary: "The caller's offices", tags: ['offices'], response: list(Office), querystring: ListOfficesQuery }, config: { operation: 'offices.listOffices' } }, async (request) => {
      const { items, pagination } = await offices.list(request.actor, request.query)
      return { data: items, pagination }
    })

    r.post('/', { schema: { summary: 'Create an office', tags: ['offices'], response: created(Office), body: CreateOfficeInput }, config: { operation: 'offices.createOffice', idempotent: true } }, async (request, reply) => {
      return await reply.code(201).send({ data: await offices.create(actorOf(request), request.body) })
    })

    r.get('/:officeId', { schema: { summary: 'One office', tags: ['offices'], response: ok(Office), params: OfficeIdParams }, config: { operation: 'offices.getOffice' } }, async (request) => {
      return { data: await offices.get(actorOf(request), request.params) }
    })

    r.patch('/:officeId', { schema: { summary: 'Update an office', tags: ['offices'], response: ok(Office), params: OfficeIdParams, body: UpdateOfficeBody }, config: { operation: 'offices.updateOffice' } }, async (request) => {
      return { data: await offices.update(actorOf(request), { ...request.body, officeId: request.params.officeId }) }
    })

    r.delete('/:officeId', { schema: { summary: 'Delete an office', tags: ['offices'], response: noContent, params: OfficeIdParams }, config: { operation: 'offices.deleteOffice' } }, async (request, reply) => {
      await offices.delete(actorOf(request), request.params)
      return await reply.code(204).send()
    })

    r.get('/:officeId/members', { schema: { summary: "An office's members", tags: ['offices'], response: list(Member), params: OfficeIdParams, querystring: ListMembersQuery }, config: { operation: 'offices.listMembers' } }, async (request) => {
      const { items, pagination } = await offices.listMembers(actorOf(request), { ...request.query, officeId: request.params.officeId })
      return { data: items, pagination }
    })

    // Removing oneself is leaving the office.
    r.delete('/:officeId/members/:userId', { schema: { summary: 'Remove a member (or leave: your own id)', tags: ['offices'], response: noContent, params: MemberParams }, config: { operation: 'offices.removeMember' } }, async (request, reply) => {
      await offices.removeMember(actorOf(request), request.params)
      return await reply.code(204).send()
    })

    r.patch('/:officeId/members/:userId', { schema: { summary: "Change a member's role", tags: ['offices'], response: ok(Member), params: MemberParams, body: RoleBody }, config: { operation: 'offices.updateMemberRole' } }, async (request) => {
      return { data: await offices.updateMemberRole(actorOf(request), { ...request.params, role: request.body.role }) }
    })

    r.post('/:officeId/invites', { schema: { summary: 'Invite someone by e-mail', tags: ['offices'], response: created(Invite), params: OfficeIdParams, body: InviteBody }, config: { operation: 'offices.inviteToOffice', idempotent: true } }, async (request, reply) => {
      return await reply.code(201).send({ data: await invites.invite(actorOf(request), { ...request.body, officeId: request.params.officeId }) })
    })

    r.get('/:officeId/invites', { schema: { summary: "An office's pending invitations", tags: ['offices'], response: list(Invite), params: OfficeIdParams, querystring: ListMembersQuery }, config: { operation: 'offices.listInvites' } }, async (request) => {
      const { items, pagination } = await invites.list(actorOf(request), { ...request.query, officeId: request.params.officeId })
      return { data: items, pagination }
    })

    r.delete('/:officeId/invites/:inviteId', { schema: { summary: 'Cancel an invitation', tags: ['offices'], response: noContent, params: InviteParams }, config: { operation: 'offices.cancelInvite' } }, async (request, reply) => {
      await invites.cancel(actorOf(request), request.params)
      return await reply.code(204).send()
    })
  }
}
