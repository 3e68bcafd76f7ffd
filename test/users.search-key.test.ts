// The users' search key (issue 26 item 7): computed by the core, the same whatever the database's
// locale — Unicode full case folding, NFKC, default-ignorable characters dropped — and written for
// existing users by the migration that adds it (checked here on a database migrated step by step).
import t from 'tap'
import { PGlite } from '@electric-sql/pglite'
import { Kysely, Migrator, sql } from 'kysely'
import { migrations } from '../migrations/index.js'
import { searchKeyOf } from '../src/core/users/search-key.js'
import { PGliteDialect } from '../src/db/pglite-dialect.js'
import type { Database } from '../src/db/schema.js'

t.test('keys: case folded in every script, compatibility forms and invisible characters aside', async (t) => {
  const same: Array<[string, string]> = [
    ['Élodie', 'éLODIE'], ['ÉLODIE', 'élodie'], ['E\u0301lodie', 'élodie'], ['Straße', 'STRASSE'], ['ẞ', 'ss'],
    ['ΣΟΦΊΑ', 'σοφία'], ['ὈΔΥΣΣΕΎΣ', 'ὀδυσσεύς'], ['Ｆｕｌｌ', 'full'], ['ﬁne', 'FINE'], ['Bo\u200Bb', 'bob'], ['Ǆemal', 'ǆemal'],
    ['Ирина', 'ИРИНА'], ['Kelvin \u212A', 'kelvin k']
  ]
  for (const [a, b] of same) t.equal(searchKeyOf(a), searchKeyOf(b), `${a} ~ ${b}`)
  t.ok(searchKeyOf('Élodie').startsWith(searchKeyOf('él')), 'Élodie is found by él')
  t.ok(searchKeyOf('Straße Bahn').startsWith(searchKeyOf('STRASS')), 'Straße by STRASS')
  t.not(searchKeyOf('Élodie'), searchKeyOf('Elodie'), 'accents still count')
})

t.test('the migration keys existing users, then the index serves the search', async (t) => {
  const pglite = await PGlite.create()
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite) })
  t.teardown(async () => { await db.destroy() })
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } })
  const names = Object.keys(migrations)
  const adding = names.findIndex((name) => name.endsWith('_users_search_key'))
  t.ok(adding > 0, 'a migration adds the key')
  t.notOk((await migrator.migrateTo(names[adding - 1]!)).error, 'migrated to the one before')
  const now = new Date()
  const before = ['Élodie Martin', 'ÖMER', 'Straße', 'plain']
  // 2,500 rows: more than one batch of the backfill.
  const rows = Array.from({ length: 2500 }, (_, i) => ({ id: `user_${String(i).padStart(5, '0')}`, email: `u${i}@example.test`, display_name: before[i % before.length]!, created_at: now, updated_at: now }))
  await sql`insert into users (id, email, display_name, created_at, updated_at) select * from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as r(id text, email text, display_name text, created_at timestamptz, updated_at timestamptz)`.execute(db)
  t.notOk((await migrator.migrateToLatest()).error, 'then to the latest')
  const keyed = await db.selectFrom('users').select(['display_name', 'search_key']).execute()
  t.equal(keyed.length, 2500)
  t.ok(keyed.every((row) => row.search_key === searchKeyOf(row.display_name)), 'every row has the core\'s key')
  const found = await sql<{ n: number }>`select count(*)::int as n from users where search_key collate "C" like ${searchKeyOf('él') + '%'} collate "C"`.execute(db)
  t.equal(found.rows[0]?.n, 625, 'él finds every Élodie')
})
