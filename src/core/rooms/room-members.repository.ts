// All SQL of room membership (DECISIONS §5 "Room members"). A membership only counts while its
// user may still see the room, so every read joins the room and re-checks visibility: a stale row
// left by a join racing with the room turning private never grants anything. The rule is
// room-access.ts's: a room open to all is public and not hidden; otherwise only its creator sees it;
// a hidden spark (an event's `sparkId`) only its creator.
import { sql, type ExpressionBuilder } from 'kysely'
import type { Db } from '../../db/database.js'
import type { Database } from '../../db/schema.js'

type MemberRoomScope = ExpressionBuilder<Database, 'room_members' | 'rooms'>

/** The member may see the room: it is open to all, or theirs. */
function roomVisibleToMember (eb: MemberRoomScope) {
  return eb.or([
    eb.and([eb('rooms.is_public', '=', true), eb('rooms.hidden_at', 'is', null)]),
    eb('room_members.user_id', '=', eb.ref('rooms.created_by'))
  ])
}

/** The member may see the spark: it is not hidden, or theirs (a deleted spark hides nothing). */
function sparkVisibleToMember (eb: MemberRoomScope, sparkId: string) {
  return eb.not(eb.exists(eb.selectFrom('sparks').select('sparks.id')
    .where('sparks.id', '=', sparkId)
    .where('sparks.hidden_at', 'is not', null)
    .whereRef('sparks.created_by', '<>', 'room_members.user_id')))
}

/** Members who may see the room now (and the spark, when the event is about one). */
export async function visibleMemberIds (db: Db, roomId: string, sparkId?: string): Promise<string[]> {
  const rows = await db.selectFrom('room_members')
    .innerJoin('rooms', 'rooms.id', 'room_members.room_id')
    .select('room_members.user_id')
    .where('room_members.room_id', '=', roomId)
    .where(roomVisibleToMember)
    .$if(sparkId !== undefined, (q) => q.where((eb) => sparkVisibleToMember(eb, sparkId ?? '')))
    .execute()
  return rows.map((r) => r.user_id)
}

export async function isVisibleMember (db: Db, roomId: string, userId: string, sparkId?: string): Promise<boolean> {
  const row = await db.selectFrom('room_members')
    .innerJoin('rooms', 'rooms.id', 'room_members.room_id')
    .select(sql<number>`1`.as('one'))
    .where('room_members.room_id', '=', roomId)
    .where('room_members.user_id', '=', userId)
    .where(roomVisibleToMember)
    .$if(sparkId !== undefined, (q) => q.where((eb) => sparkVisibleToMember(eb, sparkId ?? '')))
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
        .where((w) => w.or([w.and([w('rooms.is_public', '=', true), w('rooms.hidden_at', 'is', null)]), w('rooms.created_by', '=', userId)])))
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
