// app.canvas.v1.CanvasService: message ↔ core mapping only. Unset optional x/y pass through as
// undefined, so the core reports a missing coordinate as "is required".
import type { ServiceImpl } from '@connectrpc/connect'
import type { Core } from '../core/index.js'
import { CanvasService } from '../gen/app/canvas/v1/canvas_pb.js'
import { actorOf } from './context.js'

export function canvasService (core: Core): ServiceImpl<typeof CanvasService> {
  const { canvas, presence } = core
  return {
    async updatePosition (req, ctx) {
      return { position: await canvas.updatePosition(actorOf(ctx), { tileId: req.tileId, x: req.x, y: req.y }) }
    },
    async batchUpdatePositions (req, ctx) {
      const updates = req.updates.map((u) => ({ tileId: u.tileId, x: u.x, y: u.y }))
      return await canvas.batchUpdatePositions(actorOf(ctx), { updates })
    },
    async computeLayout (req, ctx) {
      return await canvas.computeLayout(actorOf(ctx), { roomId: req.roomId, algorithm: req.algorithm })
    },
    async validateLayout (req, ctx) {
      return await canvas.validateLayout(actorOf(ctx), { roomId: req.roomId })
    },
    async getCanvasState (req, ctx) {
      return await canvas.getState(actorOf(ctx), { roomId: req.roomId })
    },
    async getPresence (req, ctx) {
      return await presence.get(actorOf(ctx), { roomId: req.roomId })
    },
    async reportPresence (req, ctx) {
      await presence.report(actorOf(ctx), { roomId: req.roomId })
      return {}
    }
  }
}
