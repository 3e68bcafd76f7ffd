// Replays never starve live delivery (DECISIONS §17, issue 37 item 1): every client reconnecting at
// once after a restart replays on the live read pool (src/live/live-connections.ts), but at most
// READ_POOL_SIZE - 1 replay reads run at once, so one connection always serves live delivery. Shown by
// holding every replay read inside Postgres (a lock on `room_members`, which a replay's "may this
// user see it" asks and a live event to a user list never touches): live events still arrive.
// On a Postgres cluster of the test's own, with `wal_level=minimal`: there taking the lock assigns
// no transaction id, which would hold every event on the cluster back (docs/events.md, Stalls) —
// here, and in every other test file's database on a shared cluster.
import t from 'tap'
import pg from 'pg'
import { inTransaction } from '../src/core/transaction.js'
import { READ_POOL_SIZE } from '../src/live/live-connections.js'
import { formatPosition } from '../src/live/log-position.js'
import { startApp, uniqueClientIp, type TestApp } from './helpers/app.js'
import { ownPostgresUnavailable, startOwnPostgres } from './helpers/own-postgres.js'
import { signInPerson, type Person } from './helpers/people.js'
import { openStream, sleep, type SseStream } from './helpers/sse.js'

t.test('replays held inside the database take at most all but one read connection: live events still arrive', { skip: ownPostgresUnavailable() ?? false }, async (t) => {
  const cluster = await startOwnPostgres({ settings: { wal_level: 'minimal', max_wal_senders: '0' } })
  t.teardown(cluster.destroy)
  const url = cluster.urlFor({})
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  t.teardown(async () => { await admin.end() })
  const s: TestApp = await startApp({ DATABASE_URL: url, SSE_HEARTBEAT_MS: '1000' })
  t.teardown(s.close)
  const streams: SseStream[] = []
  t.teardown(() => { for (const opened of streams) opened.close() })
  const open = async (person: Person, lastEventId?: string): Promise<SseStream> => {
    const opened = await openStream(s.url, { cookie: person.cookie, headers: { 'x-forwarded-for': uniqueClientIp() }, ...(lastEventId === undefined ? {} : { lastEventId }) })
    streams.push(opened)
    t.equal(opened.status, 200)
    return opened
  }

  const owner = await signInPerson(s, 'pool-owner')
  const members = await Promise.all([1, 2, 3].map(async (i) => await signInPerson(s, `pool-member-${i}`)))
  const watcher = await signInPerson(s, 'pool-watcher')
  const roomId = (await owner.rest('POST', '/api/rooms', { name: 'Reconnects', isPublic: true })).json().data.id as string
  for (const member of members) await member.rest('GET', `/api/canvas/state?roomId=${roomId}`)
  const before = formatPosition((await s.app.live.bus.bounds()).newest)
  for (const title of ['one', 'two', 'three']) await owner.rest('POST', '/api/sparks', { roomId, title, content: '', x: 0, y: 0 })

  /** An event for the watcher alone: delivering it asks nothing of `room_members`. */
  const notifyWatcher = async (id: string): Promise<void> => {
    await inTransaction(s.app.deps, async (tx) => {
      tx.publish('spark:deleted', { id, roomId: 'elsewhere', version: 1 }, { audience: { kind: 'users', userIds: [watcher.userId] } })
    })
  }
  const live = await open(watcher)
  await notifyWatcher('marker-before')
  // Delivery is in log order: every event before the marker has been through fan-out.
  await live.waitFor((m) => m.json.payload?.id === 'marker-before')

  const locker = new pg.Client({ connectionString: url })
  await locker.connect()
  t.teardown(async () => { await locker.end() })
  await locker.query('begin')
  await locker.query('lock table room_members in access exclusive mode')

  // Nine clients reconnect at once; each replay asks whether its user may see the room's events.
  const replays: SseStream[] = []
  for (const member of members) for (let i = 0; i < 3; i++) replays.push(await open(member, before))
  const waitingReads = async (): Promise<number> => Number((await admin.query<{ n: string }>(
    "select count(*) as n from pg_stat_activity where application_name = 'canvas-live-reads' and wait_event_type = 'Lock'")).rows[0]?.n)
  const started = Date.now()
  while (await waitingReads() < READ_POOL_SIZE - 1 && Date.now() - started < 10_000) await sleep(50)
  await sleep(300)
  t.equal(await waitingReads(), READ_POOL_SIZE - 1, `replay reads waiting inside Postgres: ${READ_POOL_SIZE - 1} of the ${READ_POOL_SIZE} read connections, however many replays wait`)

  await notifyWatcher('marker-during')
  await live.waitFor((m) => m.json.payload?.id === 'marker-during', 5_000)
  t.pass('a live event arrived while every replay was held')

  await locker.query('commit')
  for (const replay of replays) {
    await replay.waitFor((m) => m.json.payload?.title === 'three', 10_000)
    t.same(replay.events().map((m) => m.json.payload?.title), ['one', 'two', 'three'], 'then each replay completes')
  }
})
