// Room operations: list (member rooms or every public room), get, create, update, delete.
// Every write publishes its SPEC event in its own transaction.
import type { Actor } from '../actor.js'
import type { CoreDeps } from '../deps.js'
import { validationError } from '../errors.js'
import { pageWindow, paginationOf, type Page } from '../pagination.js'
import { inTransaction } from '../transaction.js'
import { keyed, ONE_TRANSACTION } from '../idempotency/keyed-call.js'
import { parseInput } from '../validation.js'
import { newId } from '../../infra/ids.js'
import { loadVisibleRoom, requireRoomCreator } from './room-access.js'
import { joinRoom, removeMembersExceptCreator } from './room-members.repository.js'
import * as repo from './rooms.repository.js'
import { CreateRoomInput, ListRoomsQuery, RoomIdParams, UpdateRoomInput, toRoom, type Room } from './rooms.types.js'
import { removeRoom } from './room-removal.js'

export function createRooms (deps: CoreDeps) {
  const { db, clock } = deps

  return {
    /**
     * With a caller: the rooms they are a member of; with `scope: "public"`, or anonymous: every
     * public room (DECISIONS §5).
     */
    async list (actor: Actor | null, input: unknown): Promise<Page<Room>> {
      const query = parseInput(ListRoomsQuery, input)
      const window = pageWindow(query)
      const { rows, total } = actor === null || query.scope === 'public'
        ? await repo.listPublicRooms(db, window)
        : await repo.listMemberRooms(db, actor.userId, window)
      return { items: rows.map(toRoom), pagination: paginationOf(window, total) }
    },

    async get (actor: Actor, input: unknown): Promise<Room> {
      const { roomId } = parseInput(RoomIdParams, input)
      return toRoom(await loadVisibleRoom(db, actor, roomId))
    },

    create: keyed(deps, async (actor: Actor, input: unknown): Promise<Room> => {
      const { name, description, isPublic } = parseInput(CreateRoomInput, input)
      const now = clock.now()
      return await inTransaction(deps, async ({ trx, publish }) => {
        const room = toRoom(await repo.insertRoom(trx, { id: newId('room'), name, description: description === '' ? null : description ?? null, isPublic: isPublic ?? false, createdBy: actor.userId, now }))
        await joinRoom(trx, room.id, actor.userId, now)
        publish('room:created', room, { audience: { kind: 'room', roomId: room.id }, userId: actor.userId })
        return room
      })
    }, ONE_TRANSACTION),

    /** Creator only. Switching to private ends every membership but the creator's. */
    async update (actor: Actor, input: unknown): Promise<Room> {
      const { roomId, name, description, isPublic } = parseInput(UpdateRoomInput, input)
      if (name === undefined && description === undefined && isPublic === undefined) {
        throw validationError('(body)', 'must contain at least one of name, description, isPublic')
      }
      const now = clock.now()
      return await inTransaction(deps, async ({ trx, publish }) => {
        const current = await loadVisibleRoom(trx, actor, roomId, 'update')
        requireRoomCreator(current, actor, 'change')
        const updated = await repo.updateRoomRow(trx, roomId, { name, description: description === '' ? null : description, isPublic }, now)
        if (isPublic === false) await removeMembersExceptCreator(trx, roomId, current.created_by)
        const room = toRoom(updated ?? current)
        publish('room:updated', room, { audience: { kind: 'room', roomId: room.id }, userId: actor.userId })
        return room
      })
    },

    /** Creator only; the room's sparks and memberships go in the same transaction. */
    async delete (actor: Actor, input: unknown): Promise<void> {
      const { roomId } = parseInput(RoomIdParams, input)
      await inTransaction(deps, async (tx) => {
        const room = await loadVisibleRoom(tx.trx, actor, roomId, 'update')
        requireRoomCreator(room, actor, 'delete')
        await removeRoom(tx, roomId, actor.userId)
      })
    }
  }
}

export type Rooms = ReturnType<typeof createRooms>
