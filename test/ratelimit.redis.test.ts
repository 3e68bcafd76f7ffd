// Shared counting in Redis and what happens when Redis fails (SPEC Limits rule 4), against a
// redis-server of this test's own that it kills, restarts, pauses and resumes: two instances share
// one count; with Redis dead or frozen every request is still answered, quickly, and still limited
// (per instance, in memory); health shows the cache degraded; shared counting then resumes by itself.
import t, { type Test } from 'tap'
import { randomUUID } from 'node:crypto'
import { Code, ConnectError } from '@connectrpc/connect'
import { Redis } from 'ioredis'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/database.js'
import { AuthService } from '../src/gen/app/auth/v1/auth_pb.js'
import { startApp, testEnv, uniqueClientIp, uniqueEmail, type TestApp } from './helpers/app.js'
import { startOwnRedis } from './helpers/own-redis.js'
import { rpcClient } from './helpers/sign-in.js'

const redis = await startOwnRedis()
t.teardown(redis.stop)
const database = await openDatabase(loadConfig(testEnv()))
t.teardown(async () => { await database.close() })
// Two instances of the service behind one load balancer: same Redis, same key prefix.
const prefix = `test-shared-${randomUUID()}:`
const shared = { REDIS_URL: redis.url, RATE_LIMIT_KEY_PREFIX: prefix, RATE_LIMIT_MAX_REQUESTS: '5', RATE_LIMIT_WINDOW_MS: '2000' }
// Health stays degraded for 2 s after a count answered from memory (10 s in production).
const rateLimit = { timing: { degradedForMs: 2_000 } }
const a = await startApp(shared, { database, rateLimit })
t.teardown(a.close)
const b = await startApp(shared, { database, rateLimit })
t.teardown(b.close)
const inspect = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false })
inspect.on('error', () => {})

interface Answer { status: number, ms: number, remaining: string | undefined }

/** POST request-login (strict: 10 per address per minute) on one instance. */
async function requestLogin (app: TestApp, ip: string): Promise<Answer> {
  const started = performance.now()
  const res = await app.app.inject({ method: 'POST', url: '/api/auth/request-login', payload: { email: uniqueEmail() }, headers: { 'x-forwarded-for': ip } })
  const remaining = res.headers['ratelimit-remaining']
  return { status: res.statusCode, ms: performance.now() - started, remaining: remaining === undefined ? undefined : String(remaining) }
}

async function health (app: TestApp): Promise<{ httpStatus: number, status: string, cache: string }> {
  const res = await app.app.inject({ method: 'GET', url: '/health' })
  const body = res.json()
  return { httpStatus: res.statusCode, status: body.status, cache: body.services.cache.status }
}

async function eventually (what: string, check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`timed out waiting for: ${what}`)
}

/** 5 requests on each instance pass, the 11th (on either) is refused: one count across both. */
async function sharedCount (t: Test, label: string): Promise<void> {
  const ip = uniqueClientIp()
  const remaining: string[] = []
  for (let i = 0; i < 10; i++) {
    const answer = await requestLogin(i % 2 === 0 ? a : b, ip)
    t.equal(answer.status, 200, `${label}: request ${i + 1}`)
    remaining.push(answer.remaining ?? '')
  }
  t.same(remaining, ['9', '8', '7', '6', '5', '4', '3', '2', '1', '0'], `${label}: Remaining counts down across both instances`)
  t.equal((await requestLogin(a, ip)).status, 429, `${label}: the 11th on instance A is refused`)
  t.equal((await requestLogin(b, ip)).status, 429, `${label}: and on instance B`)
}

async function rpcCode (app: TestApp, ip: string): Promise<Code | 'ok'> {
  try {
    await rpcClient(app, AuthService, { clientIp: ip }).requestLogin({ email: uniqueEmail() })
    return 'ok'
  } catch (error) {
    return ConnectError.from(error).code
  }
}

t.test('two instances sharing Redis share one count, on both transports', async (t) => {
  t.equal((await health(a)).cache, 'healthy')
  await sharedCount(t, 'REST')
  const ip = uniqueClientIp()
  const codes: Array<Code | 'ok'> = []
  for (let i = 0; i < 11; i++) codes.push(await rpcCode(i % 2 === 0 ? a : b, ip))
  t.same(codes, [...Array(10).fill('ok'), Code.ResourceExhausted], 'RPC: 10 calls across both instances, the 11th refused')

  // The counter in Redis: `<prefix><tier>:ip:<address>` with the window's expiry.
  if (inspect.status !== 'ready') await inspect.connect()
  const key = `${prefix}strict:ip:${ip}`
  t.equal(await inspect.get(key), '11', 'one shared counter holds every call')
  const ttl = await inspect.pttl(key)
  t.ok(ttl > 0 && ttl <= 60_000, `it expires with its window (${ttl} ms left)`)
})

t.test('requests counted in one batch to Redis each get their own count', async (t) => {
  const ips = [uniqueClientIp(), uniqueClientIp(), uniqueClientIp()]
  // Each address starts with a different count: 0, 1 and 2 earlier requests on the other instance.
  for (const [earlier, ip] of ips.entries()) for (let i = 0; i < earlier; i++) await requestLogin(b, ip)
  const answers = await Promise.all(ips.map(async (ip) => await requestLogin(a, ip)))
  t.same(answers.map((x) => x.remaining), ['9', '8', '7'])

  // One address three times, and a route of another tier (standard: 2 s window here), together.
  const ip = uniqueClientIp()
  const [first, second, third, authorize] = await Promise.all([
    requestLogin(a, ip), requestLogin(a, ip), requestLogin(a, ip),
    a.app.inject({ method: 'GET', url: '/api/auth/authorize?token=none', headers: { 'x-forwarded-for': ip } })
  ])
  t.same([first, second, third].map((x) => x?.remaining).sort(), ['7', '8', '9'], 'the same key counted once per request')
  t.equal(authorize?.headers['ratelimit-remaining'], '4', 'the standard tier has its own count')
  if (inspect.status !== 'ready') await inspect.connect()
  t.equal(await inspect.get(`${prefix}strict:ip:${ip}`), '3')
  t.equal(await inspect.get(`${prefix}standard:ip:${ip}`), '1')
  const strictTtl = await inspect.pttl(`${prefix}strict:ip:${ip}`)
  const standardTtl = await inspect.pttl(`${prefix}standard:ip:${ip}`)
  t.ok(strictTtl > 2_000 && strictTtl <= 60_000, `the strict key expires with its 1-minute window (${strictTtl} ms)`)
  t.ok(standardTtl > 0 && standardTtl <= 2_000, `the standard key with its 2 s window (${standardTtl} ms)`)
})

t.test('Redis lost its scripts (SCRIPT FLUSH, as after a failover): counting stays shared', async (t) => {
  if (inspect.status !== 'ready') await inspect.connect()
  const ip = uniqueClientIp()
  t.equal((await requestLogin(a, ip)).remaining, '9')
  t.equal((await requestLogin(b, ip)).remaining, '8')
  t.equal(await inspect.script('FLUSH'), 'OK')
  // Each instance's next call finds its script gone (NOSCRIPT) and sends it again.
  t.equal((await requestLogin(a, ip)).remaining, '7', 'instance A reads the shared count')
  t.equal((await requestLogin(b, ip)).remaining, '6', 'and so does instance B')
  t.equal(await inspect.get(`${prefix}strict:ip:${ip}`), '4', 'every request counted once in Redis')
  t.equal((await health(a)).cache, 'healthy', 'no fallback to memory')
})

/** Keeps the Redis server busy for ARGV[1] microseconds: slow, but answering within the client's command timeout. */
const BUSY_SCRIPT = `
local started = redis.call('TIME')
local from = tonumber(started[1]) * 1000000 + tonumber(started[2])
while true do
  local now = redis.call('TIME')
  if tonumber(now[1]) * 1000000 + tonumber(now[2]) - from >= tonumber(ARGV[1]) then return 1 end
end
`

/** `GET /api/auth/me` without a session: 401, counted in the `read` tier (300 a minute, 10 ms wait for Redis). */
async function read (app: TestApp, ip: string): Promise<Answer> {
  const started = performance.now()
  const res = await app.app.inject({ method: 'GET', url: '/api/auth/me', headers: { 'x-forwarded-for': ip } })
  return { status: res.statusCode, ms: performance.now() - started, remaining: String(res.headers['ratelimit-remaining']) }
}

t.test('Redis slow (busy for 45 ms): a read is answered from memory without waiting, a strict request waits; Redis counts both and stays shared', async (t) => {
  if (inspect.status !== 'ready') await inspect.connect()
  const ip = uniqueClientIp()
  for (let i = 0; i < 3; i++) t.equal((await read(b, ip)).remaining, String(299 - i), `read ${i + 1} on instance B`)
  for (let i = 0; i < 3; i++) t.equal((await requestLogin(b, ip)).remaining, String(9 - i), `request-login ${i + 1} on instance B`)
  const busy = inspect.eval(BUSY_SCRIPT, 0, 45_000)
  await new Promise((resolve) => setTimeout(resolve, 5))
  const [late, waited] = await Promise.all([read(a, ip), requestLogin(a, ip)])
  await busy
  t.equal(late.status, 401)
  // Had it waited for Redis it would have read the shared count (4, so 296 remaining).
  t.equal(late.remaining, '299', "the read (10 ms wait) is answered from instance A's own count: its first for this address")
  t.equal(waited.status, 200)
  t.equal(waited.remaining, '6', 'the request-login (the strict tier waits 250 ms) read the shared count')
  // The count lands once Redis is free again; on a loaded machine (or when ioredis must resend the
  // script after a NOSCRIPT reply) that can be after the busy script returned to this client.
  const key = `${prefix}read:ip:${ip}`
  await eventually('Redis counts the late request', async () => await inspect.get(key) === '4', 2_000)
  t.equal(await inspect.get(key), '4', 'Redis counted it when the late reply came')
  t.same(await health(a), { httpStatus: 200, status: 'degraded', cache: 'degraded' }, 'a late answer loosened a limit: health says so')
  t.equal((await health(b)).cache, 'healthy', 'the instance that had nothing late is healthy')
  t.equal((await read(a, ip)).remaining, '295', 'the next request reads the shared count again: counting stayed shared')
})

t.test('a fixed window in Redis: the standard tier (5 per 2 s here) resets when the window ends', async (t) => {
  const ip = uniqueClientIp()
  const authorize = async (app: TestApp) => await app.app.inject({ method: 'GET', url: '/api/auth/authorize?token=nope', headers: { 'x-forwarded-for': ip } })
  let reset = 0
  for (let i = 0; i < 5; i++) {
    const res = await authorize(i % 2 === 0 ? a : b)
    t.equal(res.statusCode, 400)
    reset = Number(res.headers['ratelimit-reset'])
  }
  t.equal((await authorize(b)).statusCode, 429)
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, reset * 1000 - Date.now()) + 50))
  const fresh = await authorize(a)
  t.equal(fresh.statusCode, 400, 'a new window')
  t.equal(fresh.headers['ratelimit-remaining'], '4')
})

t.test('Redis killed: still answered and limited per instance, health degraded; restarted: shared counting resumes', async (t) => {
  await redis.kill()
  const ip = uniqueClientIp()
  const answers: Answer[] = []
  for (let i = 0; i < 11; i++) answers.push(await requestLogin(a, ip))
  t.same(answers.map((x) => x.status), [...Array(10).fill(200), 429], 'instance A counts alone: 10 pass, the 11th is refused')
  t.same(answers.map((x) => x.remaining), ['9', '8', '7', '6', '5', '4', '3', '2', '1', '0', '0'])
  t.equal((await requestLogin(b, ip)).status, 200, 'instance B has its own count meanwhile')
  t.equal(await rpcCode(b, uniqueClientIp()), 'ok', 'RPC answered too')
  const noisy = await a.app.inject({ method: 'GET', url: '/api/auth/me', headers: { 'x-forwarded-for': uniqueClientIp() } })
  t.equal(noisy.statusCode, 401, 'no 5xx')
  t.equal(noisy.headers['ratelimit-limit'], '300')
  const report = await health(a)
  t.same(report, { httpStatus: 200, status: 'degraded', cache: 'degraded' }, 'health: cache degraded, the service up')

  await redis.restart()
  await eventually('both instances count in Redis again', async () => (await health(a)).cache === 'healthy' && (await health(b)).cache === 'healthy')
  await sharedCount(t, 'after restart')
})

t.test('Redis frozen (SIGSTOP): no request waits on it, limits still hold, health degraded; resumed: shared again', async (t) => {
  redis.pause()
  try {
    const ip = uniqueClientIp()
    const answers: Answer[] = []
    for (let i = 0; i < 11; i++) answers.push(await requestLogin(a, ip))
    t.same(answers.map((x) => x.status), [...Array(10).fill(200), 429], 'still limited, in memory')
    const slowest = Math.max(...answers.map((x) => x.ms))
    // The first two wait 250 ms for Redis at most (the strict tier's wait, src/ratelimit/tiers.ts); by
    // then the client's 500 ms command timeout has failed the first command, and the rest skip Redis.
    t.ok(slowest < 1_000, `slowest answer ${slowest.toFixed(1)} ms`)
    const rest = answers.slice(2).map((x) => x.ms)
    // Each would take 250 ms or more had it waited for Redis; half that leaves room for a busy machine.
    t.ok(rest.reduce((sum, ms) => sum + ms, 0) / rest.length < 125, `later answers do not wait (mean ${(rest.reduce((s, ms) => s + ms, 0) / rest.length).toFixed(1)} ms)`)
    t.equal(await rpcCode(b, uniqueClientIp()), 'ok', 'RPC answered by the other instance too')
    const started = performance.now()
    t.same(await health(b), { httpStatus: 200, status: 'degraded', cache: 'degraded' })
    t.ok(performance.now() - started < 1_000, 'the health check does not hang on the frozen Redis')
  } finally {
    redis.resume()
  }
  await eventually('both instances count in Redis again', async () => (await health(a)).cache === 'healthy' && (await health(b)).cache === 'healthy')
  await sharedCount(t, 'after resume')
})

t.teardown(() => { inspect.disconnect() })
