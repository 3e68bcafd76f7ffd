// /api/canvas/presence: who is on a room's canvas now, and being there without a cursor
// (DECISIONS §17 "Presence"). Nothing is stored; joins and leaves reach the room's other members on
// their event stream (`presence:joined`, `presence:left`).
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Core } from '../core/index.js'
import { PresenceQuery, ReportPresenceInput } from '../core/presence/presence.types.js'
import { actorOf } from './identity.js'
import { noContent, ok, RoomPresence } from './responses.js'

export function presenceRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()

    r.get('/presence', { schema: { summary: 'Who is on a room\'s canvas now (at most 200, oldest first)', tags: ['canvas'], response: ok(RoomPresence), querystring: PresenceQuery }, config: { operation: 'canvas.getPresence' } }, async (request) => {
      return { data: await core.presence.get(actorOf(request), request.query) }
    })

    r.post('/presence', { schema: { summary: 'Be present on a room\'s canvas without a cursor (again: still present)', tags: ['canvas'], response: noContent, body: ReportPresenceInput }, config: { operation: 'canvas.reportPresence' } }, async (request, reply) => {
      await core.presence.report(actorOf(request), request.body)
      return await reply.code(204).send()
    })
  }
}
