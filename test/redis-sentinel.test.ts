// Redis with failover (issue 40 item 2): two instances find their Redis through a Sentinel set of
// the test's own (one master, one replica, three Sentinels) — one by REDIS_URL=redis+sentinel://…,
// the other by REDIS_SENTINELS + REDIS_SENTINEL_NAME — and count together. The master is killed
// under a steady stream of rate-limited requests and stream opens: nothing is answered 5xx, each
// instance counts alone while there is no master, and once the Sentinels promote the replica both
// count together there again (rate limits and stream caps), by themselves, within seconds.
import t, { type Test } from 'tap'
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/database.js'
import { startApp, testEnv, uniqueClientIp, uniqueEmail, type TestApp } from './helpers/app.js'
import { ownSentinelUnavailable, SENTINEL_MASTER_NAME, startOwnSentinelSet, type OwnSentinelSet } from './helpers/own-sentinel.js'
import { signInPerson, type Person } from './helpers/people.js'
import { openStream, sleep } from './helpers/sse.js'

interface Answer { status: number, remaining: string | undefined }

/** POST request-login (strict: 10 per address per minute) on one instance. */
async function requestLogin (app: TestApp, ip: string): Promise<Answer> {
  const res = await app.app.inject({ method: 'POST', url: '/api/auth/request-login', payload: { email: uniqueEmail() }, headers: { 'x-forwarded-for': ip } })
  const remaining = res.headers['ratelimit-remaining']
  return { status: res.statusCode, remaining: remaining === undefined ? undefined : String(remaining) }
}

async function eventually (what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<number> {
  const started = Date.now()
  while (Date.now() - started < timeoutMs) {
    if (await check()) return Date.now() - started
    await sleep(100)
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for: ${what}`)
}

async function sentinelTests (set: OwnSentinelSet): Promise<void> {
  const database = await openDatabase(loadConfig(testEnv()))
  t.teardown(async () => { await database.close() })
  const prefix = `test-sentinel-${randomUUID()}:`
  const a = await startApp({ REDIS_URL: set.url, RATE_LIMIT_KEY_PREFIX: prefix }, { database })
  t.teardown(a.close)
  const b = await startApp({ REDIS_URL: undefined, REDIS_SENTINELS: set.sentinels, REDIS_SENTINEL_NAME: SENTINEL_MASTER_NAME, RATE_LIMIT_KEY_PREFIX: prefix }, { database })
  t.teardown(b.close)

  /** A fresh address counted once on A, then once on B: 9 then 8 when they count together. */
  async function countedTogether (): Promise<boolean> {
    const ip = uniqueClientIp()
    const first = await requestLogin(a, ip)
    const second = await requestLogin(b, ip)
    return first.remaining === '9' && second.remaining === '8'
  }

  /** A user's five streams over both instances; the sixth refused on either when the caps are shared. */
  async function capsShared (t: Test, person: Person): Promise<void> {
    const opened = await Promise.all([a, a, a, b, b].map(async (app) => await openStream(app.url, { cookie: person.cookie, headers: { 'x-forwarded-for': uniqueClientIp() } })))
    t.teardown(() => { for (const one of opened) one.close() })
    t.ok(opened.every((one) => one.status === 200), 'five streams over two instances')
    for (const app of [a, b]) {
      const sixth = await openStream(app.url, { cookie: person.cookie, headers: { 'x-forwarded-for': uniqueClientIp() } })
      sixth.close()
      t.equal(sixth.status, 429, 'the sixth is refused: counted over both')
    }
  }

  t.test('both instances count together on the master the Sentinels name (either way of naming them)', async (t) => {
    t.ok(await countedTogether(), 'Remaining counts down across both instances')
    await capsShared(t, await signInPerson(a, 'sentinel-caps-before'))
  })

  t.test('the master killed under steady load: no 5xx, counting falls back per instance, then resumes together on the promoted replica', async (t) => {
    const streamer = await signInPerson(a, 'sentinel-streamer')
    const statuses: number[] = []
    const streamStatuses: number[] = []
    const load = { on: true }
    const ips = Array.from({ length: 40 }, () => uniqueClientIp())
    const running = (async () => {
      for (let i = 0; load.on; i++) {
        const app = i % 2 === 0 ? a : b
        statuses.push((await requestLogin(app, ips[i % ips.length]!)).status)
        if (i % 10 === 0) {
          const opened = await openStream(app.url, { cookie: streamer.cookie, headers: { 'x-forwarded-for': uniqueClientIp() } })
          streamStatuses.push(opened.status)
          opened.close()
        }
        await sleep(5)
      }
    })()
    try {
      await failover(t)
    } finally {
      load.on = false
      await running
    }

    t.ok(statuses.length > 50, `a steady stream: ${statuses.length} requests`)
    t.same(statuses.filter((status) => status >= 500), [], 'no request answered 5xx')
    t.ok(statuses.every((status) => status === 200 || status === 429), 'every answer a count: 200 or 429')
    t.ok(streamStatuses.length > 5 && streamStatuses.every((status) => status === 200), `${streamStatuses.length} streams opened meanwhile, all 200`)
  })

  async function failover (t: Test): Promise<void> {
    await sleep(500)
    const before = await set.masterPort()
    const killed = await set.killMaster()
    t.equal(killed, before)
    const alone = await eventually('each instance counting alone', async () => !(await countedTogether()), 10_000)
    t.comment(`counting alone ${alone} ms after the kill`)
    const resumed = await eventually('both instances counting together again', countedTogether, 30_000).catch(async (error: unknown) => {
      throw new Error(`${String(error)}; the Sentinels name ${await set.masterPort()} as master (${killed} was killed)`)
    })
    t.comment(`counting together again ${resumed} ms after the fallback was seen`)
    // The Sentinel asked may learn of the promotion a moment after the instances' own Sentinels did.
    await eventually('the Sentinel asked names the promoted replica', async () => (await set.masterPort()) !== killed, 10_000)
    const promoted = await set.masterPort()
    t.not(promoted, killed, 'the Sentinels promoted the replica')
    t.equal(promoted, set.dataPorts.find((port) => port !== killed))
    await sleep(300)

    const newMaster = new Redis({ port: promoted, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 })
    newMaster.on('error', () => {})
    t.teardown(() => { newMaster.disconnect() })
    await newMaster.connect()
    t.ok((await newMaster.keys(`${prefix}*`)).length > 0, 'the counters live on the new master')
  }

  t.test('after the failover, stream caps are counted over both instances again', async (t) => {
    await capsShared(t, await signInPerson(b, 'sentinel-caps-after'))
  })
}

const skip = ownSentinelUnavailable()
if (skip !== undefined) {
  t.plan(0, skip)
} else {
  const set = await startOwnSentinelSet()
  t.teardown(set.stop)
  await sentinelTests(set)
}
