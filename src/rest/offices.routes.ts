// /api/offices: offices, their members and pending invitations (SPEC's table and DECISIONS §13).
// Parse → one core call → `{ data }`.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Core } from '../core/index.js'
import {
  CreateOfficeInput, InviteBody, InviteParams, ListMembersQuery, ListOfficesQuery, MemberParams, OfficeIdParams, RoleBody, UpdateOfficeBody
} from '../core/offices/offices.types.js'
import { actorOf } from './identity.js'

export function officeRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()
    const { offices, invites } = core

    r.get('/', { schema: { querystring: ListOfficesQuery }, config: { operation: 'offices.listOffices' } }, async (request) => {
      const { items, pagination } = await offices.list(request.actor, request.query)
      return { data: items, pagination }
    })

    r.post('/', { schema: { body: CreateOfficeInput }, config: { operation: 'offices.createOffice' } }, async (request, reply) => {
      return await reply.code(201).send({ data: await offices.create(actorOf(request), request.body) })
    })

    r.get('/:officeId', { schema: { params: OfficeIdParams }, config: { operation: 'offices.getOffice' } }, async (request) => {
      return { data: await offices.get(actorOf(request), request.params) }
    })

    r.patch('/:officeId', { schema: { params: OfficeIdParams, body: UpdateOfficeBody }, config: { operation: 'offices.updateOffice' } }, async (request) => {
      return { data: await offices.update(actorOf(request), { ...request.body, officeId: request.params.officeId }) }
    })

    r.delete('/:officeId', { schema: { params: OfficeIdParams }, config: { operation: 'offices.deleteOffice' } }, async (request, reply) => {
      await offices.delete(actorOf(request), request.params)
      return await reply.code(204).send()
    })

    r.get('/:officeId/members', { schema: { params: OfficeIdParams, querystring: ListMembersQuery }, config: { operation: 'offices.listMembers' } }, async (request) => {
      const { items, pagination } = await offices.listMembers(actorOf(request), { ...request.query, officeId: request.params.officeId })
      return { data: items, pagination }
    })

    // Removing oneself is leaving the office.
    r.delete('/:officeId/members/:userId', { schema: { params: MemberParams }, config: { operation: 'offices.removeMember' } }, async (request, reply) => {
      await offices.removeMember(actorOf(request), request.params)
      return await reply.code(204).send()
    })

    r.patch('/:officeId/members/:userId', { schema: { params: MemberParams, body: RoleBody }, config: { operation: 'offices.updateMemberRole' } }, async (request) => {
      return { data: await offices.updateMemberRole(actorOf(request), { ...request.params, role: request.body.role }) }
    })

    r.post('/:officeId/invites', { schema: { params: OfficeIdParams, body: InviteBody }, config: { operation: 'offices.inviteToOffice' } }, async (request, reply) => {
      return await reply.code(201).send({ data: await invites.invite(actorOf(request), { ...request.body, officeId: request.params.officeId }) })
    })

    r.get('/:officeId/invites', { schema: { params: OfficeIdParams, querystring: ListMembersQuery }, config: { operation: 'offices.listInvites' } }, async (request) => {
      const { items, pagination } = await invites.list(actorOf(request), { ...request.query, officeId: request.params.officeId })
      return { data: items, pagination }
    })

    r.delete('/:officeId/invites/:inviteId', { schema: { params: InviteParams }, config: { operation: 'offices.cancelInvite' } }, async (request, reply) => {
      await invites.cancel(actorOf(request), request.params)
      return await reply.code(204).send()
    })
  }
}
