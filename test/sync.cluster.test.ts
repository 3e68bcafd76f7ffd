// Two instances behind one database and one Redis: events written on either reach streams on both
// exactly once, stream caps are counted together (and per instance while Redis is down), a logout
// on one ends the stream on the other, cursors cross over, and closing an instance ends its streams.
// Runs on two apps sharing one embedded PGlite, and on two apps sharing Postgres when DATABASE_URL is set.
import t, { type Test } from 'tap'
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import pg from 'pg'
import { openDatabase } from '../src/db/database.js'
import { migratedDataDir } from './helpers/database-template.js'
import { startApp, uniqueClientIp, type TestApp } from './helpers/app.js'
import { startOwnRedis } from './helpers/own-redis.js'
import { signInPerson, type Person } from './helpers/people.js'
import { ofType, openStream, sleep, type SseStream } from './helpers/sse.js'

const redis = await startOwnRedis()
t.teardown(redis.stop)

async function stream (t: Test, app: TestApp, person: Person, ip = uniqueClientIp()): Promise<SseStream> {
  const opened = await openStream(app.url, { cookie: person.cookie, headers: { 'x-forwarded-for': ip } })
  t.teardown(() => { opened.close() })
  return opened
}

interface Pair { a: TestApp, b: TestApp }

function clusterTests (label: string, pair: () => Pair): void {
  t.test(`${label}: events written on either instance reach streams on both, exactly once`, async (t) => {
    const { a, b } = pair()
    const owner = await signInPerson(a, 'cluster-owner')
    const member = await signInPerson(b, 'cluster-member')
    const ownerOnA = await stream(t, a, owner)
    const ownerOnB = await stream(t, b, owner)
    const memberOnB = await stream(t, b, member)
    const roomId = (await owner.rest('POST', '/api/rooms', { name: 'Cluster', isPublic: true })).json().data.id as string
    await b.app.inject({ method: 'GET', url: `/api/canvas/state?roomId=${roomId}`, cookies: { app_session: member.cookie } })

    const titles = Array.from({ length: 20 }, (_, i) => `spark-${i}`)
    await Promise.all(titles.map(async (title, i) => {
      const via = i % 2 === 0 ? a : b
      const res = await via.app.inject({ method: 'POST', url: '/api/sparks', cookies: { app_session: owner.cookie }, payload: { title, content: '', roomId, x: 0, y: 0 } })
      t.equal(res.statusCode, 201)
    }))
    for (const on of [ownerOnA, ownerOnB, memberOnB]) {
      await on.waitFor((m) => m.json.payload?.title === 'spark-19')
      for (const title of titles) await on.waitFor((m) => m.json.payload?.title === title)
    }
    await sleep(300)
    const idsOf = (on: SseStream): string[] => on.events().filter(ofType('spark:created')).map((m) => m.id ?? '')
    for (const on of [ownerOnA, ownerOnB, memberOnB]) {
      t.equal(idsOf(on).length, 20, 'twenty events')
      t.equal(new Set(idsOf(on)).size, 20, 'none twice')
    }
    t.same(idsOf(ownerOnA), idsOf(ownerOnB), 'the same events in the same order on both instances')
    t.same(idsOf(memberOnB), idsOf(ownerOnA))
  })

  t.test(`${label}: stream caps are counted across instances`, async (t) => {
    const { a, b } = pair()
    const user = await signInPerson(a, 'cluster-capped')
    const onA = [await stream(t, a, user), await stream(t, a, user), await stream(t, a, user)]
    const onB = [await stream(t, b, user), await stream(t, b, user)]
    t.ok([...onA, ...onB].every((o) => o.status === 200), 'five streams over two instances')
    t.equal((await stream(t, a, user)).status, 429, 'the 6th is refused on A')
    t.equal((await stream(t, b, user)).status, 429, 'and on B')
    onA[0]?.close()
    let reopened = 0
    for (let i = 0; i < 40 && reopened !== 200; i++) {
      await sleep(25)
      const attempt = await stream(t, b, user)
      reopened = attempt.status
      if (reopened !== 200) attempt.close()
    }
    t.equal(reopened, 200, 'a slot freed on A is usable on B')

    const ip = uniqueClientIp()
    const people = await Promise.all(Array.from({ length: 5 }, async (_, i) => await signInPerson(a, `cluster-ip-${i}`)))
    for (const [i, person] of people.slice(0, 4).entries()) {
      for (let k = 0; k < 5; k++) t.equal((await stream(t, (i + k) % 2 === 0 ? a : b, person, ip)).status, 200)
    }
    t.equal((await stream(t, a, people[4] as Person, ip)).status, 429, 'the 21st stream of one address, counted over both')
  })

  t.test(`${label}: a logout on one instance ends the session’s stream on the other`, async (t) => {
    const { a, b } = pair()
    const user = await signInPerson(a, 'cluster-logout')
    const onB = await stream(t, b, user)
    t.equal((await a.app.inject({ method: 'POST', url: '/api/auth/logout', cookies: { app_session: user.cookie } })).statusCode, 204)
    await onB.ended
    t.equal((await stream(t, b, user)).status, 401)
  })

  t.test(`${label}: a session revoked on one instance is refused by the other, whose session cache forgets it`, async (t) => {
    const { a, b } = pair()
    const user = await signInPerson(a, 'cluster-revoke')
    const meOnB = async (): Promise<number> => (await b.app.inject({ method: 'GET', url: '/api/auth/me', cookies: { app_session: user.cookie } })).statusCode
    t.equal(await meOnB(), 200, 'B has seen (and cached) the session')
    t.equal((await a.app.inject({ method: 'POST', url: '/api/auth/logout', cookies: { app_session: user.cookie } })).statusCode, 204)
    const deadline = Date.now() + 2_000
    let status = await meOnB()
    while (status === 200 && Date.now() < deadline) {
      await sleep(10)
      status = await meOnB()
    }
    t.equal(status, 401, 'refused on B well before the cache TTL')
  })

  t.test(`${label}: cursors cross instances; the last stream closing anywhere means cursor:left`, async (t) => {
    const { a, b } = pair()
    const alice = await signInPerson(a, 'cluster-alice')
    const bob = await signInPerson(a, 'cluster-bob')
    const roomId = (await alice.rest('POST', '/api/rooms', { name: 'Cursors', isPublic: true })).json().data.id as string
    await bob.rest('GET', `/api/canvas/state?roomId=${roomId}`)
    const aliceOnA = await stream(t, a, alice)
    const aliceOnB = await stream(t, b, alice)
    const bobOnB = await stream(t, b, bob)
    t.equal((await alice.rest('POST', '/api/canvas/cursor', { roomId, x: 3, y: 4 })).statusCode, 204, 'reported on A')
    const batch = await bobOnB.waitFor(ofType('cursors:batch-updated'))
    t.same(batch.json.payload, { cursors: [{ userId: alice.userId, roomId, x: 3, y: 4 }] }, 'received on B')

    aliceOnA.close()
    await sleep(400)
    t.notOk(bobOnB.events().some(ofType('cursor:left')), 'Alice still has a stream on B')
    aliceOnB.close()
    const left = await bobOnB.waitFor(ofType('cursor:left'))
    t.same(left.json.payload, { userId: alice.userId, roomId })
  })
}

// Two apps on one embedded database (BuildOptions.database) and one Redis.
const embedded = await openDatabase({ databaseUrl: undefined, dataDir: migratedDataDir() })
t.teardown(embedded.close)
const embeddedEnv = { DATABASE_URL: undefined, REDIS_URL: redis.url, RATE_LIMIT_KEY_PREFIX: `test-${randomUUID()}:`, SSE_HEARTBEAT_MS: '300' }
const pgliteA = await startApp(embeddedEnv, { database: embedded })
const pgliteB = await startApp(embeddedEnv, { database: embedded })
t.teardown(pgliteA.close)
t.teardown(pgliteB.close)
clusterTests('two instances on one PGlite', () => ({ a: pgliteA, b: pgliteB }))

let postgresPair: Pair | undefined
if (process.env.DATABASE_URL !== undefined) {
  const env = { REDIS_URL: redis.url, RATE_LIMIT_KEY_PREFIX: `test-${randomUUID()}:`, SSE_HEARTBEAT_MS: '300' }
  postgresPair = { a: await startApp(env), b: await startApp(env) }
  t.teardown(postgresPair.a.close)
  t.teardown(postgresPair.b.close)
  clusterTests('two instances on one Postgres', () => postgresPair as Pair)

  t.test('Postgres: when the listening connection drops, events written meanwhile arrive once it is back', async (t) => {
    // A database of its own: terminating listeners must not touch other test files' apps.
    const name = `test_live_${randomUUID().replaceAll('-', '')}`
    const admin = new pg.Client({ connectionString: process.env.DATABASE_URL })
    await admin.connect()
    await admin.query(`create database ${name}`)
    t.teardown(async () => {
      await admin.query(`drop database if exists ${name} with (force)`)
      await admin.end()
    })
    const url = new URL(process.env.DATABASE_URL as string)
    url.pathname = `/${name}`
    const own = await startApp({ DATABASE_URL: url.toString(), REDIS_URL: redis.url })
    t.teardown(own.close)
    const user = await signInPerson(own, 'listener-drop')
    const opened = await stream(t, own, user)
    // The function runs in the select list, so only on the rows the filter kept.
    const terminated = await admin.query<{ done: boolean }>(
      "select pg_terminate_backend(pid) as done from pg_stat_activity where datname = $1 and application_name = 'canvas-live-listener'", [name])
    t.same(terminated.rows, [{ done: true }], 'the one listening connection was cut')
    for (const room of ['gap-1', 'gap-2', 'gap-3']) await user.rest('POST', '/api/rooms', { name: room, isPublic: false })
    await opened.waitFor((m) => m.json.payload?.name === 'gap-3', 10_000)
    await user.rest('POST', '/api/rooms', { name: 'after', isPublic: false })
    await opened.waitFor((m) => m.json.payload?.name === 'after', 10_000)
    t.same(opened.events().map((m) => m.json.payload?.name), ['gap-1', 'gap-2', 'gap-3', 'after'], 'all of them, once, in order')
  })
} else {
  t.test('two instances on one Postgres', { skip: 'DATABASE_URL is not set' }, async () => {})
}

t.test('while Redis is down each instance counts its own streams, and counts recover', async (t) => {
  const { a } = { a: pgliteA }
  const user = await signInPerson(a, 'redis-down')
  await redis.kill()
  t.teardown(async () => { await redis.restart() })
  const five = await Promise.all(Array.from({ length: 5 }, async () => await stream(t, a, user)))
  t.ok(five.every((o) => o.status === 200), 'streams still open without Redis')
  t.equal((await stream(t, a, user)).status, 429, 'and the cap still holds on the instance')
  for (const o of five) o.close()
  await Promise.all(five.map(async (o) => await o.ended))
  for (let i = 0; i < 40 && a.app.live.streams.size > 0; i++) await sleep(25)
  await redis.restart()
  await sleep(1_000) // the client reconnects within 500 ms
  const again = await Promise.all(Array.from({ length: 5 }, async () => await stream(t, a, user)))
  t.ok(again.every((o) => o.status === 200), 'every slot came back: nothing leaked')
})

t.test('a slot claim that times out on a frozen Redis leaves nothing behind there once it answers again', async (t) => {
  const user = await signInPerson(pgliteA, 'redis-frozen')
  const key = `${embeddedEnv.RATE_LIMIT_KEY_PREFIX}sse:user:${user.userId}`
  const inspect = new Redis(redis.url)
  t.teardown(() => { inspect.disconnect() })
  redis.pause()
  let opened: SseStream
  try {
    opened = await stream(t, pgliteA, user)
  } finally {
    redis.resume()
  }
  t.equal(opened.status, 200, 'the stream opened on the instance\'s own count while Redis did not answer')
  // The claim script reached the frozen Redis and ran when it woke; the compensating removal follows it.
  let members = -1
  for (let i = 0; i < 40 && members !== 0; i++) {
    await sleep(50)
    members = await inspect.zcard(key)
  }
  t.equal(members, 0, 'no slot of this stream is left in Redis (it is counted in the instance\'s memory)')
  const more = await Promise.all(Array.from({ length: 4 }, async () => await stream(t, pgliteA, user)))
  t.ok(more.every((o) => o.status === 200), 'the user still has exactly their five streams')
  t.equal((await stream(t, pgliteA, user)).status, 429)
})

t.test('closing an instance ends its streams at once and frees their slots', async (t) => {
  const c = await startApp(embeddedEnv, { database: embedded })
  const user = await signInPerson(pgliteA, 'shutdown')
  const onC = await Promise.all(Array.from({ length: 5 }, async () => await stream(t, c, user)))
  t.ok(onC.every((o) => o.status === 200))
  t.equal(c.app.live.streams.size, 5)
  const started = Date.now()
  await c.close()
  await Promise.all(onC.map(async (o) => await o.ended))
  t.ok(Date.now() - started < 3_000, `close() ended five open streams and returned in ${Date.now() - started} ms`)
  t.equal(c.app.live.streams.size, 0)
  const onA = await Promise.all(Array.from({ length: 5 }, async () => await stream(t, pgliteA, user)))
  t.ok(onA.every((o) => o.status === 200), 'their slots are free: the clients reconnect elsewhere')
  for (const o of onA) o.close()
  await Promise.all(onA.map(async (o) => await o.ended))
  await sleep(100)
  t.equal(pgliteA.app.live.streams.size, 0, 'a client that disconnects is gone from the hub at once')
})
