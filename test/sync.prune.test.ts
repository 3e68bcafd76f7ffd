// Pruning the event log never holds delivery back (issue 28 item 1): it removes what is past the
// 24-hour retention in small batches, each a short transaction of its own, so events keep arriving
// while a large backlog is pruned; and only one session prunes at a time (an advisory lock that
// nobody waits for: an instance that finds it taken leaves the work to the one holding it).
// PGlite by default; when DATABASE_URL is set, a Postgres database of this file's own: pruning is
// database-wide, and every app that starts prunes, so test files beside this one would prune its
// backlog (or hold the lock) mid-test.
import t from 'tap'
import pg from 'pg'
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { startApp, uniqueClientIp } from './helpers/app.js'
import { signInPerson } from './helpers/people.js'
import { createScratchDatabase } from './helpers/scratch-database.js'
import { openStream } from './helpers/sse.js'

const scratch = process.env.DATABASE_URL === undefined ? undefined : await createScratchDatabase(process.env.DATABASE_URL, 'canvas_prune', { migrated: true })
if (scratch !== undefined) t.teardown(scratch.drop)
const s = await startApp(scratch === undefined ? {} : { DATABASE_URL: scratch.urlAs() })
t.teardown(s.close)
const db = s.app.deps.db
const nobody = JSON.stringify({ kind: 'users', userIds: ['user_nobody'] })

/**
 * `count` events of this test's own (tagged), written `hoursAgo` hours ago by an ancient transaction
 * `tx`: at the head of the log, as old events are, and long delivered (the stream never sees them).
 */
async function seed (tag: string, count: number, hoursAgo: number, tx: number): Promise<void> {
  await sql`insert into event_log (tx, type, payload, audience, user_id, created_at)
    select ${String(tx)}::xid8, 'room:updated', jsonb_build_object('tag', ${tag}::text, 'n', n), ${nobody}::jsonb, null, now() - make_interval(hours => ${hoursAgo})
    from generate_series(1, ${count}) as n`.execute(db)
}

async function left (tag: string): Promise<number> {
  const result = await sql<{ n: number }>`select count(*)::int as n from event_log where payload->>'tag' = ${tag}`.execute(db)
  return result.rows[0]?.n ?? 0
}

t.test('a backlog of 50,000 expired events is pruned in batches while events keep being delivered', async (t) => {
  const old = `old-${randomUUID()}`
  const recent = `recent-${randomUUID()}`
  await seed(old, 50_000, 25, 3)
  await seed(recent, 10, 1, 4)
  const user = await signInPerson(s, 'while-pruning')
  const watcher = await openStream(s.url, { cookie: user.cookie, headers: { 'x-forwarded-for': uniqueClientIp() } })
  t.teardown(() => { watcher.close() })

  let pruned: number | undefined
  const pruning = s.app.live.bus.prune().then((n) => { pruned = n })
  await user.rest('POST', '/api/rooms', { name: 'written while pruning', isPublic: false })
  await watcher.waitFor((m) => m.json.payload?.name === 'written while pruning', 10_000)
  t.equal(pruned, undefined, 'delivered while the pruning was still under way')
  await pruning
  t.ok((pruned ?? 0) >= 50_000, `${String(pruned)} events pruned`)
  t.equal(await left(old), 0, 'every expired event is gone')
  t.equal(await left(recent), 10, 'the ones within 24 hours stay, and so does everything after them')
  await sql`delete from event_log where payload->>'tag' = ${recent}`.execute(db)
})

t.test('one session prunes at a time: while another holds the pruning lock, prune() leaves the work to it at once', { skip: scratch === undefined ? 'Postgres only (PGlite has one session)' : false }, async (t) => {
  const old = `held-${randomUUID()}`
  await seed(old, 2_000, 25, 3)
  const other = new pg.Client({ connectionString: scratch?.urlAs() })
  await other.connect()
  t.teardown(async () => { await other.end().catch(() => {}) })
  await other.query('select pg_advisory_lock($1::int, 1)', [0x4556])
  const started = Date.now()
  t.equal(await s.app.live.bus.prune(), 0, 'nothing pruned here')
  t.ok(Date.now() - started < 2_000, 'and it did not wait for the lock')
  t.equal(await left(old), 2_000)
  await other.query('select pg_advisory_unlock($1::int, 1)', [0x4556])
  await s.app.live.bus.prune()
  t.equal(await left(old), 0, 'once free, the next prune removes them')
})
