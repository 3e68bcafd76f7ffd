// /api/rooms: the caller's rooms (every public room with ?scope=public), one room, create,
// update and delete. Parse → one core call → `{ data }`.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Core } from '../core/index.js'
import { CreateRoomInput, ListRoomsQuery, RoomIdParams, UpdateRoomBody } from '../core/rooms/rooms.types.js'
import { actorOf } from './identity.js'
import { Room, created, list, noContent, ok } from './responses.js'

export function roomRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()

    r.get('/', { schema: { summary: "The caller's rooms (every public room with ?scope=public)", tags: ['rooms'], response: list(Room), querystring: ListRoomsQuery }, config: { operation: 'rooms.listRooms' } }, async (request) => {
      const { items, pagination } = await core.rooms.list(request.actor, request.query)
      return { data: items, pagination }
    })

    r.post('/', { schema: { summary: 'Create a room', tags: ['rooms'], response: created(Room), body: CreateRoomInput }, config: { operation: 'rooms.createRoom', idempotent: true } }, async (request, reply) => {
      return await reply.code(201).send({ data: await core.rooms.create(actorOf(request), request.body) })
    })

    r.get('/:roomId', { schema: { summary: 'One room', tags: ['rooms'], response: ok(Room), params: RoomIdParams }, config: { operation: 'rooms.getRoom' } }, async (request) => {
      return { data: await core.rooms.get(actorOf(request), request.params) }
    })

    r.patch('/:roomId', { schema: { summary: 'Update a room', tags: ['rooms'], response: ok(Room), params: RoomIdParams, body: UpdateRoomBody }, config: { operation: 'rooms.updateRoom' } }, async (request) => {
      return { data: await core.rooms.update(actorOf(request), { ...request.body, roomId: request.params.roomId }) }
    })

    r.delete('/:roomId', { schema: { summary: 'Delete a room', tags: ['rooms'], response: noContent, params: RoomIdParams }, config: { operation: 'rooms.deleteRoom' } }, async (request, reply) => {
      await core.rooms.delete(actorOf(request), request.params)
      return await reply.code(204).send()
    })
  }
}
