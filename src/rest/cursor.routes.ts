// /api/canvas/cursor: clients report their cursor in a room, or leave its canvas (DECISIONS §6/§7).
// Nothing is stored; other members receive the positions coalesced on their event stream.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Core } from '../core/index.js'
import { CursorLeaveInput, CursorMoveInput } from '../core/cursors/cursors.types.js'
import { actorOf } from './identity.js'
import { noContent } from './responses.js'

export function cursorRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()

    r.post('/cursor', { schema: { summary: 'Report the cursor position', tags: ['canvas'], response: noContent, body: CursorMoveInput }, config: { operation: 'canvas.moveCursor' } }, async (request, reply) => {
      await core.cursors.move(actorOf(request), request.body)
      return await reply.code(204).send()
    })

    r.post('/cursor/leave', { schema: { summary: 'Leave the canvas (removes the cursor)', tags: ['canvas'], response: noContent, body: CursorLeaveInput }, config: { operation: 'canvas.leaveCanvas' } }, async (request, reply) => {
      await core.cursors.leave(actorOf(request), request.body)
      return await reply.code(204).send()
    })
  }
}
