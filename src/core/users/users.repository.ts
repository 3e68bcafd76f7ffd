import type { Selectable } from 'kysely'
import type { Db } from '../../db/database.js'
import type { UsersTable } from '../../db/schema.js'
import { newId } from '../../infra/ids.js'

export async function findUserById (db: Db, id: string): Promise<Selectable<UsersTable> | undefined> {
  return await db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function findUserIdByEmail (db: Db, email: string): Promise<string | undefined> {
  const row = await db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst()
  return row?.id
}

/** Returns the user with this (normalised) address, creating it on first sign-in. Safe under races. */
export async function findOrCreateUserByEmail (db: Db, email: string, now: Date): Promise<Selectable<UsersTable>> {
  const inserted = await db.insertInto('users')
    .values({ id: newId('user'), email, display_name: email.split('@')[0] ?? email, created_at: now, updated_at: now })
    .onConflict((oc) => oc.column('email').doNothing())
    .returningAll()
    .executeTakeFirst()
  if (inserted !== undefined) return inserted
  return await db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirstOrThrow()
}

export async function deleteUserRow (db: Db, id: string): Promise<void> {
  await db.deleteFrom('users').where('id', '=', id).execute()
}
