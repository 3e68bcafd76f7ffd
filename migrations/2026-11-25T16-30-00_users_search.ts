// Frozen: never edit a migration that has shipped; add a new one.
// User search by display-name prefix (DECISIONS §9). The lower-cased name under the "C" collation:
// a btree on it serves both the prefix match (`LIKE 'ab%'` needs byte-order comparison, which the
// database's own collation may not give) and the result order, so a page is an index range scan
// that stops after `limit` rows instead of a sort of every match. It carries what a result shows,
// so pages and their count are index-only scans (Postgres plans an index-only scan over an
// expression only when the expression's column is in the index too).
import { sql, type Kysely } from 'kysely'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up (db: Kysely<any>): Promise<void> {
  await sql`create index users_display_name_prefix on users ((lower(display_name) collate "C"), id) include (display_name, avatar_url, created_at)`.execute(db)
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down (db: Kysely<any>): Promise<void> {
  await sql`drop index users_display_name_prefix`.execute(db)
}
