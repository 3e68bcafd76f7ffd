// /api/rooms: the caller's rooms (every public room with ?scope=public), one room, create,
// update and delete. Parse → one core call → `{ data }`.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Core } from '../core/index.js'
import { CreateRoomInput, ListRoomsQuery, RoomIdParams, UpdateRoomBody } from '../core/rooms/rooms.types.js'
import { actorOf } from './identity.js'

export function roomRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()

    r.get('/', { schema: { querystring: ListRoomsQuery }, config: { operation: 'rooms.listRooms' } }, async (request) => {
      const { items, pagination } = await core.rooms.list(request.actor, request.query)
      return { data: items, pagination }
    })

    r.post('/', { schema: { body: CreateRoomInput }, config: { operation: 'rooms.createRoom' } }, async (request, reply) => {
      return await reply.code(201).send({ data: await core.rooms.create(actorOf(request), request.body) })
    })

    r.get('/:roomId', { schema: { params: RoomIdParams }, config: { operation: 'rooms.getRoom' } }, async (request) => {
      return { data: await core.rooms.get(actorOf(request), request.params) }
    })

    r.patch('/:roomId', { schema: { params: RoomIdParams, body: UpdateRoomBody }, config: { operation: 'rooms.updateRoom' } }, async (request) => {
      return { data: await core.rooms.update(actorOf(request), { ...request.body, roomId: request.params.roomId }) }
    })

    r.delete('/:roomId', { schema: { params: RoomIdParams }, config: { operation: 'rooms.deleteRoom' } }, async (request, reply) => {
      await core.rooms.delete(actorOf(request), request.params)
      return await reply.code(204).send()
    })
  }
}
