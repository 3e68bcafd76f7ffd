// app.rooms.v1.RoomsService: message ↔ core mapping only.
import type { ServiceImpl } from '@connectrpc/connect'
import type { Core } from '../core/index.js'
import { RoomsService } from '../gen/app/rooms/v1/rooms_pb.js'
import { idempotentCall } from './idempotency.js'
import { actorOf, optionalActorOf } from './context.js'

export function roomsService (core: Core): ServiceImpl<typeof RoomsService> {
  const { rooms } = core
  return {
    async listRooms (req, ctx) {
      const { items, pagination } = await rooms.list(optionalActorOf(ctx), { page: req.page, limit: req.limit, scope: req.scope })
      return { rooms: items, pagination }
    },
    async getRoom (req, ctx) {
      return { room: await rooms.get(actorOf(ctx), { roomId: req.roomId }) }
    },
    async createRoom (req, ctx) {
      return await idempotentCall(core, ctx, async () => ({ room: await rooms.create(actorOf(ctx), { name: req.name, description: req.description, isPublic: req.isPublic }) }))
    },
    async updateRoom (req, ctx) {
      return { room: await rooms.update(actorOf(ctx), { roomId: req.roomId, name: req.name, description: req.description, isPublic: req.isPublic }) }
    },
    async deleteRoom (req, ctx) {
      await rooms.delete(actorOf(ctx), { roomId: req.roomId })
      return {}
    }
  }
}
