// Frozen: never edit a migration that has shipped; add a new one.
// Account deletion in bounded steps (issue 37, src/core/users/account-deletion.ts): `deleting_at` is
// set by the first, short transaction of a deletion (the account can no longer sign in) and renewed
// after each batch; a deletion whose mark has not moved for minutes was interrupted, and the
// service finishes it. The partial index keeps finding them a read of the few rows being deleted.
import { sql, type Kysely } from 'kysely'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('users').addColumn('deleting_at', sql`timestamptz(3)`).execute()
  await db.schema.createIndex('users_deleting_at').on('users').column('deleting_at').where(sql.ref('deleting_at'), 'is not', null).execute()
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('users_deleting_at').execute()
  await db.schema.alterTable('users').dropColumn('deleting_at').execute()
}
