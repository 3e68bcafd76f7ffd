import { sql, type Selectable } from 'kysely'
import type { Db } from '../../db/database.js'
import type { UsersTable } from '../../db/schema.js'
import { newId } from '../../infra/ids.js'
import type { PageWindow } from '../pagination.js'
import { searchKeyOf } from './search-key.js'

export async function findUserById (db: Db, id: string): Promise<Selectable<UsersTable> | undefined> {
  return await db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst()
}

/** The user's row, locked until the transaction ends (a profile change that reads what it replaces). */
export async function lockUserRow (db: Db, id: string): Promise<Selectable<UsersTable> | undefined> {
  return await db.selectFrom('users').selectAll().where('id', '=', id).forUpdate().executeTakeFirst()
}

export async function findUserIdByEmail (db: Db, email: string): Promise<string | undefined> {
  const row = await db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst()
  return row?.id
}

/** Returns the user with this (normalised) address, creating it on first sign-in. Safe under races. */
export async function findOrCreateUserByEmail (db: Db, email: string, now: Date): Promise<Selectable<UsersTable>> {
  const displayName = email.split('@')[0] ?? email
  const inserted = await db.insertInto('users')
    .values({ id: newId('user'), email, display_name: displayName, search_key: searchKeyOf(displayName), created_at: now, updated_at: now })
    .onConflict((oc) => oc.column('email').doNothing())
    .returningAll()
    .executeTakeFirst()
  if (inserted !== undefined) return inserted
  return await db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirstOrThrow()
}

export async function deleteUserRow (db: Db, id: string): Promise<void> {
  await db.deleteFrom('users').where('id', '=', id).execute()
}

type PublicUserRow = Pick<Selectable<UsersTable>, 'id' | 'display_name' | 'avatar_url' | 'created_at'>

/** The name key the search index is built on (migration users_search_key): the core's search key
 *  (search-key.ts), compared in byte order. */
const nameKey = sql<string>`search_key collate "C"`

/** `%`, `_` and the escape character itself match literally in a LIKE prefix. */
function likePrefix (text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`) + '%'
}

/**
 * Users whose search key starts with `keyPrefix` (the search key of what was typed), in key order:
 * an index range scan that stops after the page. Only the first `maxMatches` matches can be paged to
 * (and counted): a two-letter prefix may match a tenth of all users, and nobody pages through them —
 * they type on. `except` leaves one user out (one already shown first).
 */
export async function searchByNamePrefix (db: Db, keyPrefix: string, window: Pick<PageWindow, 'offset' | 'limit'>, maxMatches: number, except?: string): Promise<{ rows: PublicUserRow[], total: number }> {
  const prefixMatch = sql<boolean>`${nameKey} like (${likePrefix(keyPrefix)} collate "C")`
  const matches = except === undefined ? prefixMatch : sql<boolean>`${prefixMatch} and id <> ${except}`
  const limit = Math.min(window.limit, maxMatches - window.offset)
  const rows = limit <= 0
    ? []
    : await db.selectFrom('users')
      .select(['id', 'display_name', 'avatar_url', 'created_at'])
      .where(matches)
      .orderBy(nameKey).orderBy('id')
      .limit(limit).offset(window.offset)
      .execute()
  // A page that is not full tells the total without counting.
  if (rows.length < limit && (rows.length > 0 || window.offset === 0)) return { rows, total: window.offset + rows.length }
  // Ordered like the page, so the count walks the same index range (a bounded index-only scan)
  // rather than a sequential scan that stops at the thousandth match wherever it lies.
  const reachable = db.selectFrom('users').select(sql`1`.as('one')).where(matches).orderBy(nameKey).limit(maxMatches).as('reachable')
  const { total } = await db.selectFrom(reachable).select(sql<number>`count(*)::int`.as('total')).executeTakeFirstOrThrow()
  return { rows, total }
}

/** The one user with this (normalised) address, as anyone may see them. */
export async function findPublicUserByEmail (db: Db, email: string): Promise<PublicUserRow | undefined> {
  return await db.selectFrom('users').select(['id', 'display_name', 'avatar_url', 'created_at']).where('email', '=', email).executeTakeFirst()
}

export async function findPublicUsersByIds (db: Db, ids: readonly string[]): Promise<PublicUserRow[]> {
  if (ids.length === 0) return []
  // One array parameter rather than a hundred: the statement is the same text whatever the count.
  return await db.selectFrom('users').select(['id', 'display_name', 'avatar_url', 'created_at']).where(sql<boolean>`id = any(${[...ids]}::text[])`).execute()
}

/** A new display name is written with its search key, always together. */
export async function updateProfile (db: Db, id: string, change: { displayName?: string, avatarUrl?: string | null }, now: Date): Promise<Selectable<UsersTable> | undefined> {
  return await db.updateTable('users')
    .set({
      ...(change.displayName === undefined ? {} : { display_name: change.displayName, search_key: searchKeyOf(change.displayName) }),
      ...(change.avatarUrl === undefined ? {} : { avatar_url: change.avatarUrl }),
      updated_at: now
    })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst()
}
