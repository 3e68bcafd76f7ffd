// Frozen: never edit a migration that has shipped; add a new one.
// User search that does not depend on the database's locale (DECISIONS §9, issue 26): `lower()` in
// Postgres follows the database's LC_CTYPE (under "C" it lowers ASCII only: `Élodie` was not found
// by `él`). The key is now computed by the core (src/core/users/search-key.ts) and stored beside the
// name, indexed in byte order under "C", with what a result shows (so pages and their count are
// index-only scans, as before). Existing rows are keyed here, in batches by id, with this
// migration's own copy of the key function (a migration is frozen; the core's may change later,
// with a migration of its own).
import { sql, type Kysely } from 'kysely'
import { caseFold } from 'unicode-case-folding'

const BATCH = 1000
const IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu

function searchKeyOf (text: string): string {
  return caseFold(text.normalize('NFKC')).replace(IGNORABLE, '').normalize('NFKC')
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('users').addColumn('search_key', 'text').execute()
  let after = ''
  for (;;) {
    const rows = await db.selectFrom('users').select(['id', 'display_name']).where('id', '>', after).orderBy('id').limit(BATCH).execute() as Array<{ id: string, display_name: string }>
    if (rows.length === 0) break
    const ids = rows.map((row) => row.id)
    const keys = rows.map((row) => searchKeyOf(row.display_name))
    await sql`update users set search_key = batch.key from unnest(${ids}::text[], ${keys}::text[]) as batch(id, key) where users.id = batch.id`.execute(db)
    after = ids[ids.length - 1]!
  }
  await sql`alter table users alter column search_key set not null`.execute(db)
  await sql`create index users_search_key on users ((search_key collate "C"), id) include (display_name, avatar_url, created_at)`.execute(db)
  await sql`drop index users_display_name_prefix`.execute(db)
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down (db: Kysely<any>): Promise<void> {
  await sql`create index users_display_name_prefix on users ((lower(display_name) collate "C"), id) include (display_name, avatar_url, created_at)`.execute(db)
  await db.schema.alterTable('users').dropColumn('search_key').execute()
}
