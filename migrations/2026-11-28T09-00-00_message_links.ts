// Frozen: never edit a migration that has shipped; add a new one.
// A message may carry a link to act on it (issue 38 item 3: an office invitation's message links to
// accepting it). The link names the invitation by its id, never by its token: the token stays stored
// only as a hash (DECISIONS §13).
import type { Kysely } from 'kysely'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('messages').addColumn('link', 'text').execute()
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('messages').dropColumn('link').execute()
}
