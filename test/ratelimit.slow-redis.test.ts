// A Redis that answers, but 50 ms late (issue 28 item 4), through a proxy that holds every reply
// back (test/helpers/delay-proxy.ts) in front of a redis-server of this test's own. Two instances
// share one count: S reaches Redis through the proxy, F directly. A read on S is answered at once
// from S's own count (it would otherwise wait 50 ms), and that is not silent: it is logged (one line
// at once, then at most one summary per period) and health says `cache: degraded` until a while after
// the last such answer, then healthy again by itself (both 10 s in production, shorter here). The strict tier (it sends mail) waits for the late
// Redis instead, so its limit holds across both instances.
import t from 'tap'
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/database.js'
import { createLimiterCounts } from '../src/ratelimit/limiter-counts.js'
import { startApp, testEnv, uniqueClientIp, uniqueEmail, type TestApp } from './helpers/app.js'
import { startDelayProxy } from './helpers/delay-proxy.js'
import { startOwnRedis } from './helpers/own-redis.js'

const redis = await startOwnRedis()
t.teardown(redis.stop)
const proxy = await startDelayProxy({ host: '127.0.0.1', port: redis.port }, 50)
t.teardown(proxy.close)
const database = await openDatabase(loadConfig(testEnv()))
t.teardown(async () => { await database.close() })

interface LogLine { level: number, msg: string, [key: string]: unknown }
const lines: LogLine[] = []
const fastLines: LogLine[] = []
const collect = (into: LogLine[]) => ({ write: (line: string) => { into.push(JSON.parse(line) as LogLine) } })
const WARN = 40
const INFO = 30
const limiterLines = (level: number, from = lines): LogLine[] => from.filter((l) => l.level === level && l.msg.startsWith('rate limiter:'))

const prefix = `test-slow-${randomUUID()}:`
// The summary period outlasts the 20 late reads below (50 ms each), so one summary counts them all.
const REPORT_EVERY_MS = 4_000
const DEGRADED_FOR_MS = 3_000
const rateLimit = { timing: { reportEveryMs: REPORT_EVERY_MS, degradedForMs: DEGRADED_FOR_MS } }
const slow = await startApp({ REDIS_URL: proxy.url, RATE_LIMIT_KEY_PREFIX: prefix, LOG_LEVEL: 'info' }, { database, logStream: collect(lines), rateLimit })
t.teardown(slow.close)
const fast = await startApp({ REDIS_URL: redis.url, RATE_LIMIT_KEY_PREFIX: prefix, LOG_LEVEL: 'warn' }, { database, logStream: collect(fastLines), rateLimit })
t.teardown(fast.close)
const inspect = new Redis(redis.url, { maxRetriesPerRequest: 0 })
t.teardown(() => { inspect.disconnect() })

/** `GET /api/auth/me` without a session: 401, counted in the `read` tier (300 a minute) by address. */
async function read (app: TestApp, ip: string): Promise<{ status: number, remaining: string }> {
  const res = await app.app.inject({ method: 'GET', url: '/api/auth/me', headers: { 'x-forwarded-for': ip } })
  return { status: res.statusCode, remaining: String(res.headers['ratelimit-remaining']) }
}

/** `POST /api/auth/request-login`: the `strict` tier (10 a minute). */
async function requestLogin (app: TestApp, ip: string): Promise<{ status: number, remaining: string }> {
  const res = await app.app.inject({ method: 'POST', url: '/api/auth/request-login', payload: { email: uniqueEmail() }, headers: { 'x-forwarded-for': ip } })
  return { status: res.statusCode, remaining: String(res.headers['ratelimit-remaining']) }
}

async function health (app: TestApp): Promise<{ httpStatus: number, status: string, cache: string }> {
  const res = await app.app.inject({ method: 'GET', url: '/health' })
  const body = res.json()
  return { httpStatus: res.statusCode, status: body.status, cache: body.services.cache.status }
}

async function eventually (what: string, check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`timed out waiting for: ${what}`)
}

t.test('before anything is late, both instances are healthy', async (t) => {
  t.same(await health(slow), { httpStatus: 200, status: 'healthy', cache: 'healthy' }, 'a slow PING is not a degradation by itself')
  t.same(await health(fast), { httpStatus: 200, status: 'healthy', cache: 'healthy' })
})

t.test('reads on the slow instance are answered from its own count, counted in Redis later, logged once, and health is degraded', async (t) => {
  const ip = uniqueClientIp()
  for (let i = 0; i < 3; i++) t.equal((await read(fast, ip)).remaining, String(299 - i), `read ${i + 1} on F counts in Redis`)
  const answers = []
  for (let i = 0; i < 20; i++) answers.push(await read(slow, ip))
  t.ok(answers.every((a) => a.status === 401), 'every read answered (401: no session)')
  // Had S waited for Redis, its first read would have said 296 (the shared count, 4).
  t.same(answers.map((a) => a.remaining), Array.from({ length: 20 }, (_, i) => String(299 - i)), "answered from S's own count, not the shared one")
  await eventually('Redis counts the late reads', async () => await inspect.get(`${prefix}read:ip:${ip}`) === '23', 5_000)

  const warnings = limiterLines(WARN)
  t.equal(warnings.length, 1, 'one warning for the run so far, not one per request')
  t.match(warnings[0]?.msg, /did not answer within the read tier's wait/)
  t.match(warnings[0], { tier: 'read', waitMs: 10, late: { read: 1 } }, 'it names the tier, its wait and the count')
  t.same(await health(slow), { httpStatus: 200, status: 'degraded', cache: 'degraded' }, 'health: cache degraded (still 200: the API works)')
  // F reaches Redis directly; only on a machine so busy that a reply of its own took over 10 ms is
  // it degraded too, and then it logged that itself.
  const fastWasLate = limiterLines(WARN, fastLines).length > 0
  t.equal((await health(fast)).cache, fastWasLate ? 'degraded' : 'healthy', `the instance that reaches Redis directly: ${fastWasLate ? 'late once itself, and says so' : 'healthy'}`)
})

t.test('the strict tier waits for the late Redis: its limit holds across both instances', async (t) => {
  const ip = uniqueClientIp()
  const remaining: string[] = []
  for (let i = 0; i < 10; i++) {
    const answer = await requestLogin(i < 5 ? fast : slow, ip)
    t.equal(answer.status, 200)
    remaining.push(answer.remaining)
  }
  t.same(remaining, ['9', '8', '7', '6', '5', '4', '3', '2', '1', '0'], 'S reads the shared count, 50 ms late')
  t.equal((await requestLogin(slow, ip)).status, 429, 'the 11th, on S, is refused')
  t.equal((await requestLogin(fast, ip)).status, 429, 'and on F')
  t.equal(await inspect.get(`${prefix}strict:ip:${ip}`), '12')
  t.notOk(limiterLines(WARN).some((l) => l.tier === 'strict'), 'no strict request was answered late')
})

t.test('a summary line while late answers go on, then healthy again by itself', async (t) => {
  await eventually('the summary of the period', () => limiterLines(WARN).length >= 2, 15_000)
  const summary = limiterLines(WARN)[1]
  t.match(summary?.msg, new RegExp(`\\d+ requests answered from this instance's own count in the last ${REPORT_EVERY_MS / 1000} s`))
  // The other 19 reads (a read cannot beat the proxy's 50 ms, so all were late).
  t.match(summary, { late: { read: 19 }, waitsMs: { read: 10, strict: 250 } })
  // Nothing late since: degraded ends DEGRADED_FOR_MS after the last late answer, and a line says so.
  await eventually('health healthy again', async () => (await health(slow)).cache === 'healthy', 15_000)
  t.same(await health(slow), { httpStatus: 200, status: 'healthy', cache: 'healthy' })
  await eventually('the all-clear line', () => limiterLines(INFO).some((l) => l.msg.includes(`no request answered from this instance's own count in the last ${REPORT_EVERY_MS / 1000} s`)), 15_000)
  t.equal(limiterLines(WARN).length, 2, 'no more warnings once nothing is late')
})

t.test('in production, health stays degraded for 10 s after the last count answered alone', async (t) => {
  let now = 0
  const warnings: string[] = []
  const counts = createLimiterCounts({ log: { warn: (_details, message) => { warnings.push(message) }, info: () => {} }, waitsMs: { read: 10 }, now: () => now })
  t.teardown(() => { counts.close() })
  t.notOk(counts.degraded(), 'nothing late yet')
  counts.record('read', 'shared')
  t.notOk(counts.degraded(), 'a shared count is no degradation')
  counts.record('read', 'late')
  t.equal(warnings.length, 1, 'the first late answer is logged at once')
  now = 9_999
  t.ok(counts.degraded(), 'degraded 9,999 ms later')
  counts.record('read', 'unavailable')
  now = 9_999 + 9_999
  t.ok(counts.degraded(), 'a later local answer extends it')
  now = 9_999 + 10_000
  t.notOk(counts.degraded(), 'healthy 10 s after the last one')
})
