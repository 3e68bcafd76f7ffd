// /api/invites: what an invitation's token invites to (public), and accepting it (DECISIONS §13).
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Core } from '../core/index.js'
import { AcceptInviteInput, InviteTokenInput } from '../core/offices/offices.types.js'
import { actorOf } from './identity.js'
import { InviteAcceptance, InviteInfo, ok } from './responses.js'

export function inviteRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()

    r.post('/accept', { schema: { summary: 'Accept an invitation: by the mailed token, or by its id from the invitee\'s inbox', tags: ['offices'], response: ok(InviteAcceptance), body: AcceptInviteInput }, config: { operation: 'offices.acceptInvite' } }, async (request) => {
      return { data: await core.invites.accept(actorOf(request), request.body) }
    })

    r.get('/:token', { schema: { summary: 'What an invitation is for (public)', tags: ['offices'], response: ok(InviteInfo), params: InviteTokenInput }, config: { operation: 'offices.getInviteInfo' } }, async (request) => {
      return { data: await core.invites.info(request.params) }
    })
  }
}
