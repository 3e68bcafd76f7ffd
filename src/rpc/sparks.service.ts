// app.sparks.v1.SparksService: message ↔ core mapping only. Unset optional x/y/expectedVersion
// pass through as undefined, so the core reports a missing coordinate as "is required".
import type { ServiceImpl } from '@connectrpc/connect'
import type { Core } from '../core/index.js'
import { SparksService } from '../gen/app/sparks/v1/sparks_pb.js'
import { idempotentCall } from './idempotency.js'
import { actorOf } from './context.js'

export function sparksService (core: Core): ServiceImpl<typeof SparksService> {
  const { sparks } = core
  return {
    async listSparks (req, ctx) {
      const { items, pagination } = await sparks.list(actorOf(ctx), { roomId: req.roomId, page: req.page, limit: req.limit })
      return { sparks: items, pagination }
    },
    async getSpark (req, ctx) {
      return { spark: await sparks.get(actorOf(ctx), { sparkId: req.sparkId }) }
    },
    async createSpark (req, ctx) {
      return await idempotentCall(core, ctx, async () => ({ spark: await sparks.create(actorOf(ctx), { title: req.title, content: req.content, roomId: req.roomId, x: req.x, y: req.y }) }))
    },
    async updateSpark (req, ctx) {
      return { spark: await sparks.update(actorOf(ctx), { sparkId: req.sparkId, title: req.title, content: req.content, expectedVersion: req.expectedVersion }) }
    },
    async deleteSpark (req, ctx) {
      await sparks.delete(actorOf(ctx), { sparkId: req.sparkId })
      return {}
    },
    async moveSpark (req, ctx) {
      return await sparks.move(actorOf(ctx), { sparkId: req.sparkId, x: req.x, y: req.y })
    }
  }
}
