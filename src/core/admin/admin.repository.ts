// The SQL of the admin lists (users and rooms, whoever owns them). Lists page with a separate exact
// count and order newest first (id breaks ties), like every other list.
import { sql, type Selectable } from 'kysely'
import type { Db } from '../../db/database.js'
import type { RoomsTable, UsersTable } from '../../db/schema.js'
import type { PageWindow } from '../pagination.js'

export type AdminUserRow = Pick<Selectable<UsersTable>, 'id' | 'email' | 'display_name' | 'avatar_url' | 'created_at' | 'updated_at' | 'suspended_at'> & { room_count: number }
export type AdminRoomRow = Selectable<RoomsTable> & { member_count: number, spark_count: number }

/** `%`, `_` and the escape character itself match literally inside a LIKE pattern. */
function containing (text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}

export interface UserFilters { email?: string | undefined, q?: string | undefined }

export async function listUsers (db: Db, filters: UserFilters, window: PageWindow): Promise<{ rows: AdminUserRow[], total: number }> {
  let base = db.selectFrom('users')
  // E-mail addresses are stored lower-cased (src/core/auth).
  if (filters.email !== undefined) base = base.where('email', '=', filters.email.toLowerCase())
  if (filters.q !== undefined) {
    const pattern = containing(filters.q)
    base = base.where((eb) => eb.or([eb('email', 'ilike', pattern), eb('display_name', 'ilike', pattern)]))
  }
  const { total } = await base.select(sql<number>`count(*)::int`.as('total')).executeTakeFirstOrThrow()
  const rows = await base
    .select(['id', 'email', 'display_name', 'avatar_url', 'created_at', 'updated_at', 'suspended_at'])
    .select((eb) => eb.selectFrom('rooms').whereRef('rooms.created_by', '=', 'users.id').select(sql<number>`count(*)::int`.as('n')).as('room_count'))
    .orderBy('created_at', 'desc').orderBy('id', 'desc')
    .limit(window.limit).offset(window.offset)
    .execute()
  return { rows: rows.map((row) => ({ ...row, room_count: row.room_count ?? 0 })), total }
}

export async function findUser (db: Db, id: string): Promise<AdminUserRow | undefined> {
  const row = await db.selectFrom('users')
    .select(['id', 'email', 'display_name', 'avatar_url', 'created_at', 'updated_at', 'suspended_at'])
    .select((eb) => eb.selectFrom('rooms').whereRef('rooms.created_by', '=', 'users.id').select(sql<number>`count(*)::int`.as('n')).as('room_count'))
    .where('id', '=', id)
    .executeTakeFirst()
  return row === undefined ? undefined : { ...row, room_count: row.room_count ?? 0 }
}

export interface RoomFilters { createdBy?: string | undefined, isPublic?: boolean | undefined, q?: string | undefined }

function roomsWithCounts (db: Db) {
  return db.selectFrom('rooms')
    .selectAll('rooms')
    .select((eb) => eb.selectFrom('room_members').whereRef('room_members.room_id', '=', 'rooms.id').select(sql<number>`count(*)::int`.as('n')).as('member_count'))
    .select((eb) => eb.selectFrom('sparks').whereRef('sparks.room_id', '=', 'rooms.id').select(sql<number>`count(*)::int`.as('n')).as('spark_count'))
}

function withCounts<T extends { member_count: number | null, spark_count: number | null }> (row: T): T & { member_count: number, spark_count: number } {
  return { ...row, member_count: row.member_count ?? 0, spark_count: row.spark_count ?? 0 }
}

export async function listRooms (db: Db, filters: RoomFilters, window: PageWindow): Promise<{ rows: AdminRoomRow[], total: number }> {
  let base = db.selectFrom('rooms')
  if (filters.createdBy !== undefined) base = base.where('created_by', '=', filters.createdBy)
  if (filters.isPublic !== undefined) base = base.where('is_public', '=', filters.isPublic)
  if (filters.q !== undefined) base = base.where('name', 'ilike', containing(filters.q))
  const { total } = await base.select(sql<number>`count(*)::int`.as('total')).executeTakeFirstOrThrow()
  const ids = base.select('id').orderBy('created_at', 'desc').orderBy('id', 'desc').limit(window.limit).offset(window.offset)
  const rows = await roomsWithCounts(db).where('rooms.id', 'in', ids).orderBy('rooms.created_at', 'desc').orderBy('rooms.id', 'desc').execute()
  return { rows: rows.map(withCounts), total }
}

export async function findRoom (db: Db, id: string): Promise<AdminRoomRow | undefined> {
  const row = await roomsWithCounts(db).where('rooms.id', '=', id).executeTakeFirst()
  return row === undefined ? undefined : withCounts(row)
}
