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

/**
 * Account deletion, one batch: the user's next rooms (by id) whose sparks add up to at most
 * `maxSparks` (always at least one room; a room holds at most its tile limit), each deleted whole
 * with its sparks and memberships, so no room is ever seen half-deleted. Answers each deleted room's
 * other members who could see it (a private room had none), to be told it is gone; none once the
 * user has no room left.
 */
export async function deleteRoomsCreatedByBatch (db: Db, userId: string, maxRooms: number, maxSparks: number): Promise<Array<{ roomId: string, memberIds: string[] }>> {
  const candidates = await db.selectFrom('rooms')
    .select(['rooms.id', sql<number>`(select count(*)::int from sparks where sparks.room_id = rooms.id)`.as('sparks')])
    .where('created_by', '=', userId)
    .orderBy('id')
    .limit(maxRooms)
    .execute()
  const ids: string[] = []
  let sparks = 0
  for (const room of candidates) {
    if (ids.length > 0 && sparks + room.sparks > maxSparks) break
    ids.push(room.id)
    sparks += room.sparks
  }
  if (ids.length === 0) return []
  const members = await db.selectFrom('room_members')
    .innerJoin('rooms', 'rooms.id', 'room_members.room_id')
    .select(['room_members.room_id', 'room_members.user_id'])
    .where('room_members.room_id', 'in', ids)
    .where('rooms.is_public', '=', true)
    .where('room_members.user_id', '<>', userId)
    .execute()
  await db.deleteFrom('sparks').where('room_id', 'in', ids).execute()
  await db.deleteFrom('room_members').where('room_id', 'in', ids).execute()
  const rooms = await db.deleteFrom('rooms').where('id', 'in', ids).where('created_by', '=', userId).returning('id').execute()
  const membersOf = new Map<string, string[]>()
  for (const { room_id: roomId, user_id: memberId } of members) membersOf.set(roomId, [...membersOf.get(roomId) ?? [], memberId])
  return rooms.map(({ id }) => ({ roomId: id, memberIds: membersOf.get(id) ?? [] }))
}

/** Account deletion, one batch: up to `limit` of the user's memberships in rooms of others (their
 *  own rooms went whole); how many went. */
export async function deleteMembershipsBatch (db: Db, userId: string, limit: number): Promise<number> {
  const next = db.selectFrom('room_members').select('room_id').where('user_id', '=', userId).limit(limit)
  const deleted = await db.deleteFrom('room_members').where('user_id', '=', userId).where('room_id', 'in', next).executeTakeFirst()
  return Number(deleted.numDeletedRows)
}
