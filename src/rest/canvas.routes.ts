// /api/canvas: tile positions, batches, layout and canvas state. Replies are the RPC response
// shapes inside `{ data }` (UpdatePosition's `position` is the data itself).
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Core } from '../core/index.js'
import { BatchUpdatePositionsInput, CanvasStateQuery, ComputeLayoutInput, RoomIdInput, UpdatePositionInput } from '../core/canvas/canvas.types.js'
import { actorOf } from './identity.js'
import { CanvasState, LayoutResult, LayoutValidation, PositionBatch, PositionResult, ok } from './responses.js'

export function canvasRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()

    r.patch('/position', { schema: { summary: 'Move a tile', tags: ['canvas'], response: ok(PositionResult), body: UpdatePositionInput }, config: { operation: 'canvas.updatePosition' } }, async (request) => {
      return { data: await core.canvas.updatePosition(actorOf(request), request.body) }
    })

    r.patch('/positions/batch', { schema: { summary: 'Move several tiles at once', tags: ['canvas'], response: ok(PositionBatch), body: BatchUpdatePositionsInput }, config: { operation: 'canvas.batchUpdatePositions' } }, async (request) => {
      return { data: await core.canvas.batchUpdatePositions(actorOf(request), request.body) }
    })

    r.post('/layout/compute', { schema: { summary: "Lay a room's tiles out", tags: ['canvas'], response: ok(LayoutResult), body: ComputeLayoutInput }, config: { operation: 'canvas.computeLayout' } }, async (request) => {
      return { data: await core.canvas.computeLayout(actorOf(request), request.body) }
    })

    r.post('/layout/validate', { schema: { summary: "Check a room's layout for overlaps", tags: ['canvas'], response: ok(LayoutValidation), body: RoomIdInput }, config: { operation: 'canvas.validateLayout' } }, async (request) => {
      return { data: await core.canvas.validateLayout(actorOf(request), request.body) }
    })

    r.get('/state', { schema: { summary: "A room's canvas: tiles and cursors", tags: ['canvas'], response: ok(CanvasState), querystring: CanvasStateQuery }, config: { operation: 'canvas.getCanvasState' } }, async (request) => {
      return { data: await core.canvas.getState(actorOf(request), request.query) }
    })
  }
}
