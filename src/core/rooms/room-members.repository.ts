// All SQL of room membership (DECISIONS §5 "Room members"). A membership only counts while its
// user may still see the room, so every read joins the room and re-checks visibility: a stale row
// left by a join racing with the room turning private never grants anything.
import { sql } from 'kysely'
import type { Db } from '../../db/database.js'

/** Members who may see the room now: all members of a public room, only the creator of a private one. */
export async function visibleMemberIds (db: Db, roomId: string): Promise<string[]> {
  const rows = await db.selectFrom('room_members')
    .innerJoin('rooms', 'rooms.id', 'room_members.room_id')
    .select('room_members.user_id')
    .where('room_members.room_id', '=', roomId)
    .where((eb) => eb.or([eb('rooms.is_public', '=', true), eb('room_members.user_id', '=', eb.ref('rooms.created_by'))]))
    .execute()
  return rows.map((r) => r.user_id)
}

export async function isVisibleMember (db: Db, roomId: string, userId: string): Promise<boolean> {
  const row = await db.selectFrom('room_members')
    .innerJoin('rooms', 'rooms.id', 'room_members.room_id')
    .select(sql<number>`1`.as('one'))
    .where('room_members.room_id', '=', roomId)
    .where('room_members.user_id', '=', userId)
    .where((eb) => eb.or([eb('rooms.is_public', '=', true), eb('rooms.created_by', '=', userId)]))
    .executeTakeFirst()
  return row !== undefined
}

/**
 * Makes the user a member when they may see the room (public, or theirs). Idempotent; safe under races.
 * Inserting from the room row means a room deleted or made private meanwhile gains no member.
 */
export async function joinRoom (db: Db, roomId: string, userId: string, now: Date): Promise<void> {
  try {
    await db.insertInto('room_members')
      .columns(['room_id', 'user_id', 'joined_at'])
      .expression((eb) => eb.selectFrom('rooms')
        .select((s) => [s.ref('rooms.id').as('room_id'), s.val(userId).as('user_id'), s.val(now).as('joined_at')])
        .where('rooms.id', '=', roomId)
        .where((w) => w.or([w('rooms.is_public', '=', true), w('rooms.created_by', '=', userId)])))
      .onConflict((oc) => oc.columns(['room_id', 'user_id']).doNothing())
      .execute()
  } catch (error) {
    // A reader (outside a transaction) racing with the room's deletion: there is nothing to join.
    // Writers hold a lock on the room row, so this cannot happen inside their transactions.
    if ((error as { code?: unknown }).code === FOREIGN_KEY_VIOLATION) return
    throw error
  }
}

const FOREIGN_KEY_VIOLATION = '23503'

/** When a room turns private every membership but the creator's ends. */
export async function removeMembersExceptCreator (db: Db, roomId: string, creatorId: string): Promise<void> {
  await db.deleteFrom('room_members').where('room_id', '=', roomId).where('user_id', '<>', creatorId).execute()
}

export async function deleteRoomMembers (db: Db, roomId: string): Promise<void> {
  await db.deleteFrom('room_members').where('room_id', '=', roomId).execute()
}
