// All SQL of rooms. Lists page with a separate exact count; both order newest first (id breaks ties).
import { sql, type Selectable } from 'kysely'
import type { Db } from '../../db/database.js'
import type { RoomsTable } from '../../db/schema.js'
import type { PageWindow } from '../pagination.js'

export type RoomRow = Selectable<RoomsTable>

/**
 * `share` for writes inside the room (a concurrent rename is fine, a concurrent delete or switch
 * to private waits); `update` for changing or deleting the room itself.
 */
export type RoomLock = 'none' | 'share' | 'update'

export async function insertRoom (db: Db, room: { id: string, name: string, description: string | null, isPublic: boolean, createdBy: string, now: Date }): Promise<RoomRow> {
  return await db.insertInto('rooms').values({
    id: room.id,
    name: room.name,
    description: room.description,
    is_public: room.isPublic,
    created_by: room.createdBy,
    created_at: room.now,
    updated_at: room.now
  }).returningAll().executeTakeFirstOrThrow()
}

export async function findRoom (db: Db, id: string, lock: RoomLock = 'none'): Promise<RoomRow | undefined> {
  const query = db.selectFrom('rooms').selectAll().where('id', '=', id)
  if (lock === 'share') return await query.forShare().executeTakeFirst()
  if (lock === 'update') return await query.forUpdate().executeTakeFirst()
  return await query.executeTakeFirst()
}

/** Locks rooms in id order (a fixed order, so two multi-room writes cannot deadlock). */
export async function lockRoomsForShare (db: Db, ids: readonly string[]): Promise<RoomRow[]> {
  if (ids.length === 0) return []
  return await db.selectFrom('rooms').selectAll().where('id', 'in', ids).orderBy('id').forShare().execute()
}

export async function updateRoomRow (db: Db, id: string, patch: { name?: string, description?: string | null, isPublic?: boolean }, now: Date): Promise<RoomRow | undefined> {
  return await db.updateTable('rooms')
    .set({
      ...(patch.name === undefined ? {} : { name: patch.name }),
      ...(patch.description === undefined ? {} : { description: patch.description }),
      ...(patch.isPublic === undefined ? {} : { is_public: patch.isPublic }),
      updated_at: now
    })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst()
}

export async function deleteRoomRow (db: Db, id: string): Promise<void> {
  await db.deleteFrom('rooms').where('id', '=', id).execute()
}

/** The rooms the user is a member of and may still see (DECISIONS §5). */
export async function listMemberRooms (db: Db, userId: string, window: PageWindow): Promise<{ rows: RoomRow[], total: number }> {
  const base = db.selectFrom('rooms')
    .innerJoin('room_members', 'room_members.room_id', 'rooms.id')
    .where('room_members.user_id', '=', userId)
    .where((eb) => eb.or([eb.and([eb('rooms.is_public', '=', true), eb('rooms.hidden_at', 'is', null)]), eb('rooms.created_by', '=', userId)]))
  const { total } = await base.select(sql<number>`count(*)::int`.as('total')).executeTakeFirstOrThrow()
  const rows = await base.selectAll('rooms')
    .orderBy('rooms.created_at', 'desc').orderBy('rooms.id', 'desc')
    .limit(window.limit).offset(window.offset)
    .execute()
  return { rows, total }
}

/** Every public room open to all: a hidden one is listed to its creator among their own rooms only. */
export async function listPublicRooms (db: Db, window: PageWindow): Promise<{ rows: RoomRow[], total: number }> {
  const base = db.selectFrom('rooms').where('is_public', '=', true).where('hidden_at', 'is', null)
  const { total } = await base.select(sql<number>`count(*)::int`.as('total')).executeTakeFirstOrThrow()
  const rows = await base.selectAll()
    .orderBy('created_at', 'desc').orderBy('id', 'desc')
    .limit(window.limit).offset(window.offset)
    .execute()
  return { rows, total }
}

/** Account deletion: the user's rooms, with every spark and membership in them; answers each room's
 * other members who could see it (a private room had none), to be told it is gone. */
export async function deleteRoomsCreatedBy (db: Db, userId: string): Promise<Array<{ roomId: string, memberIds: string[] }>> {
  const owned = db.selectFrom('rooms').select('id').where('created_by', '=', userId)
  const members = await db.selectFrom('room_members')
    .innerJoin('rooms', 'rooms.id', 'room_members.room_id')
    .select(['room_members.room_id', 'room_members.user_id'])
    .where('rooms.created_by', '=', userId)
    .where('rooms.is_public', '=', true)
    .where('room_members.user_id', '<>', userId)
    .execute()
  await db.deleteFrom('sparks').where('room_id', 'in', owned).execute()
  await db.deleteFrom('room_members').where('room_id', 'in', owned).execute()
  const rooms = await db.deleteFrom('rooms').where('created_by', '=', userId).returning('id').execute()
  return rooms.map(({ id }) => ({ roomId: id, memberIds: members.filter((m) => m.room_id === id).map((m) => m.user_id) }))
}
