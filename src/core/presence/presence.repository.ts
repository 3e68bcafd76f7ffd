// All SQL of presence: who of the users present in a room may be shown. A suspended user, or one
// whose account is being deleted, is never shown (DECISIONS §11, §17); users cannot otherwise be
// hidden (a `hide` applies to rooms, sparks and shelves).
import { sql } from 'kysely'
import type { Db } from '../../db/database.js'

export interface ShownUserRow {
  id: string
  display_name: string
  avatar_url: string | null
}

/**
 * Of `userIds` (in presence order), those who may be shown and who may still see the room (members of
 * a public room, or its creator: a room turned private or hidden keeps its creator alone), in that
 * order: the first `limit` with the count of all. One statement, however many are present: the ids
 * go as one array parameter, each looked up by primary key.
 */
export async function shownPresentUsers (db: Db, roomId: string, userIds: readonly string[], limit: number): Promise<{ rows: ShownUserRow[], total: number }> {
  if (userIds.length === 0) return { rows: [], total: 0 }
  const result = await sql<ShownUserRow & { total: number }>`
    select u.id, u.display_name, u.avatar_url, (count(*) over ())::int as total
    from unnest(${[...userIds]}::text[]) with ordinality as present(user_id, n)
    join users u on u.id = present.user_id
    join room_members m on m.room_id = ${roomId} and m.user_id = present.user_id
    join rooms r on r.id = m.room_id
    where u.suspended_at is null and u.deleting_at is null
      and ((r.is_public and r.hidden_at is null) or r.created_by = u.id)
    order by present.n
    limit ${limit}`.execute(db)
  return { rows: result.rows.map((row) => ({ id: row.id, display_name: row.display_name, avatar_url: row.avatar_url })), total: result.rows[0]?.total ?? 0 }
}

/** Of `userIds`, those who may be shown (any order). */
export async function shownUsers (db: Db, userIds: readonly string[]): Promise<ShownUserRow[]> {
  if (userIds.length === 0) return []
  return await db.selectFrom('users')
    .select(['id', 'display_name', 'avatar_url'])
    .where(sql<boolean>`id = any(${[...userIds]}::text[])`)
    .where('suspended_at', 'is', null)
    .where('deleting_at', 'is', null)
    .execute()
}
