// `npx tsx bench/retention.ts` (issue 38 items 4 and 9): a day's worth of idempotency keys at the
// write tier, pruned by one retention run (src/core/retention/). The write tier allows a user 100
// creates a minute; every keyed create stores one key, kept 24 hours: 100 × 60 × 24 = 144,000 keys
// per user per day. The table is filled as it stands after two such days — one day expired, one
// still live — for BENCH_USERS users (default 10: 1.44 M expired + 1.44 M live rows), with stored
// answers the size of a room create's, then analysed as autovacuum would have. One run must leave 0
// expired keys and every live one; it prints its time, rows/s, batches and the longest batch (each
// batch is one short transaction), and how many users at the write tier's full rate that pace keeps
// up with (creation: 100/60 ≈ 1.67 keys/s per user).
// BENCH_USERS (10), BENCH_KEYS_PER_USER (144000); DATABASE_URL selects Postgres (the run prunes that
// whole database: give it one of its own), else PGlite in a temporary folder.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { buildDist, builtModule } from './harness.js'

buildDist()
const root = join(import.meta.dirname, '..')
const { openDatabase } = await import(pathToFileURL(builtModule(root, 'db/database.js')).href) as typeof import('../src/db/database.js')
const { pruneExpiredRows, RETENTION_BATCH } = await import(pathToFileURL(builtModule(root, 'core/retention/retention.js')).href) as typeof import('../src/core/retention/retention.js')
const { sql } = await import('kysely')

const users = Number(process.env.BENCH_USERS ?? 10)
const keysPerUser = Number(process.env.BENCH_KEYS_PER_USER ?? 100 * 60 * 24)
const DAY_MS = 24 * 3600_000
const INSERT_CHUNK = 50_000
/** A stored outcome as `POST /api/rooms` leaves it: the created room, ~300 bytes of JSON. */
const OUTCOME = JSON.stringify({ value: { id: 'room_0123456789abcdefghijkl', name: 'A room of the benchmark', description: '', isPublic: false, createdBy: 'user_0123456789abcdefghijkl', createdAt: '2026-11-28T10:00:00.000Z', updatedAt: '2026-11-28T10:00:00.000Z', version: 1 } })

const database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: mkdtempSync(join(tmpdir(), 'bench-retention-')) })
const { db } = database
const now = new Date()
const run = Date.now().toString(36)

console.log(`${database.kind === 'postgres' ? 'Postgres' : 'PGlite'}: ${users} users × ${keysPerUser.toLocaleString('en')} keys expired + as many live`)
const filling = performance.now()
for (let u = 0; u < users; u++) {
  const userId = `user_bench_${run}_${u}`
  await sql`insert into users (id, email, display_name, search_key) values (${userId}, ${`${userId}@example.test`}, ${`bench ${u}`}, ${`bench ${u}`})`.execute(db)
  for (const expired of [true, false]) {
    // Spread over the day they were made: expired ones expired during the last 24 h, live ones expire in the next 24 h.
    const base = expired ? now.getTime() - DAY_MS : now.getTime()
    for (let from = 1; from <= keysPerUser; from += INSERT_CHUNK) {
      const to = Math.min(keysPerUser, from + INSERT_CHUNK - 1)
      await sql`insert into idempotency_keys (user_id, account_id, idem_key, fingerprint, outcome, created_at, expires_at)
        select ${userId}, ${userId}, ${expired ? 'old-' : 'new-'} || g, md5(g::text), ${OUTCOME}::json,
          ${new Date(base)}::timestamptz + g * ${DAY_MS / keysPerUser}::float8 * interval '1 millisecond' - interval '1 day',
          ${new Date(base)}::timestamptz + g * ${DAY_MS / keysPerUser}::float8 * interval '1 millisecond'
        from generate_series(${from}::int, ${to}::int) as g`.execute(db)
    }
  }
}
await sql`analyze idempotency_keys`.execute(db)
console.log(`filled in ${((performance.now() - filling) / 1000).toFixed(1)} s`)

const count = async (expired: boolean): Promise<number> => {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from idempotency_keys where ${expired ? sql`expires_at <= ${now}` : sql`expires_at > ${now}`}`.execute(db)
  return rows[0]?.n ?? NaN
}
const expiredBefore = await count(true)
const liveBefore = await count(false)

const silent = { info () {}, warn () {}, error () {}, debug () {}, trace () {}, fatal () {}, child () { return silent } }
const started = performance.now()
const report = await pruneExpiredRows({ db, clock: { now: () => now }, log: silent as never })
const seconds = (performance.now() - started) / 1000
const rule = report.rules.find((r) => r.name.startsWith('idempotency_keys:'))
const expiredAfter = await count(true)
const liveAfter = await count(false)
await database.close()

const perSecond = (rule?.removed ?? 0) / seconds
const keysPerUserPerSecond = 100 / 60
console.log(`\nexpired keys: ${expiredBefore.toLocaleString('en')} before, ${expiredAfter} after one run (goal 0); live keys kept: ${liveAfter.toLocaleString('en')} of ${liveBefore.toLocaleString('en')}`)
console.log(`one run: ${seconds.toFixed(1)} s, ${Math.round(perSecond).toLocaleString('en')} rows/s, ${rule?.batches ?? 0} batches of at most ${RETENTION_BATCH} rows, longest batch ${rule?.longestBatchMs.toFixed(1) ?? '?'} ms`)
console.log(`that pace keeps up with ${Math.floor(perSecond / keysPerUserPerSecond).toLocaleString('en')} users creating at the write tier's full rate (${keysPerUserPerSecond.toFixed(2)} keys/s each)`)
if (expiredAfter !== 0 || liveAfter !== liveBefore) process.exitCode = 1
