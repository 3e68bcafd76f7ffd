// Rate limiting on both gateways (SPEC Limits): each tier's exact boundary with the handler not run
// past it, the header values, user vs address keys, counted 401s, exempt routes and window reset.
// Runs on whatever backend the environment gives (memory, or the shared Redis under its own prefix).
import t, { type Test } from 'tap'
import Fastify from 'fastify'
import { Code, ConnectError } from '@connectrpc/connect'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/database.js'
import { AuthService } from '../src/gen/app/auth/v1/auth_pb.js'
import { CanvasService } from '../src/gen/app/canvas/v1/canvas_pb.js'
import { PassportService } from '../src/gen/app/passport/v1/passport_pb.js'
import { RoomsService } from '../src/gen/app/rooms/v1/rooms_pb.js'
import { SparksService } from '../src/gen/app/sparks/v1/sparks_pb.js'
import { RtcService } from '../src/gen/app/rtc/v1/rtc_pb.js'
import { createLimiter } from '../src/ratelimit/limiter.js'
import type { Tier } from '../src/ratelimit/tiers.js'
import { lastMailTo, mailCount, movableClock, startApp, testEnv, uniqueClientIp, uniqueEmail } from './helpers/app.js'
import { rpcClient, signInWithCookie, signInWithRpc } from './helpers/sign-in.js'

const database = await openDatabase(loadConfig(testEnv()))
t.teardown(async () => { await database.close() })
// The standard tier is small here so its boundary is quick to reach; other tiers are fixed.
const s = await startApp({ RATE_LIMIT_MAX_REQUESTS: '7' }, { database })
t.teardown(s.close)

const RATE_HEADERS = ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']

type HeaderBag = Record<string, string | string[] | number | undefined> | Headers
function header (headers: HeaderBag, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined
  const value = headers[name]
  return value === undefined ? undefined : String(value)
}

/** The three values, checked equal in both header families. */
function limits (t: Test, headers: HeaderBag): { limit: number, remaining: number, reset: number } {
  for (const name of ['limit', 'remaining', 'reset']) {
    t.equal(header(headers, `x-ratelimit-${name}`), header(headers, `ratelimit-${name}`), `X-RateLimit-${name} equals RateLimit-${name}`)
  }
  return {
    limit: Number(header(headers, 'ratelimit-limit')),
    remaining: Number(header(headers, 'ratelimit-remaining')),
    reset: Number(header(headers, 'ratelimit-reset'))
  }
}

async function rpcFailure (call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call
  } catch (error) {
    return ConnectError.from(error)
  }
  throw new Error('the call succeeded')
}

t.test('strict over REST: 10 sign-in links per minute per address, the 11th is 429 and sends nothing', async (t) => {
  const ip = uniqueClientIp()
  const email = uniqueEmail('strict-rest')
  const windowStart = Date.now()
  let firstReset = 0
  for (let i = 1; i <= 10; i++) {
    const res = await s.app.inject({ method: 'POST', url: '/api/auth/request-login', payload: { email }, headers: { 'x-forwarded-for': ip } })
    t.equal(res.statusCode, 200, `request ${i} passes`)
    const { limit, remaining, reset } = limits(t, res.headers)
    t.equal(limit, 10)
    t.equal(remaining, 10 - i, 'Remaining counts down')
    if (i === 1) firstReset = reset
    t.equal(reset, firstReset, 'Reset stays the end of the one window')
  }
  // Reset is the window's end in Unix seconds: 60 s after the first request.
  t.ok(firstReset >= Math.floor((windowStart + 60_000) / 1000) && firstReset <= Math.ceil((Date.now() + 60_000) / 1000), `Reset ${firstReset} is the window end`)

  const over = await s.app.inject({ method: 'POST', url: '/api/auth/request-login', payload: { email }, headers: { 'x-forwarded-for': ip } })
  t.equal(over.statusCode, 429)
  const body = over.json()
  t.same(Object.keys(body).sort(), ['error', 'message', 'retryAfter'])
  t.equal(body.error, 'Rate limit exceeded')
  t.type(body.retryAfter, 'number')
  t.ok(body.retryAfter >= 1 && body.retryAfter <= 60, `retryAfter ${body.retryAfter} s`)
  t.equal(body.message, `Too many requests, retry in ${body.retryAfter} seconds.`)
  t.equal(over.headers['retry-after'], String(body.retryAfter))
  const overLimits = limits(t, over.headers)
  t.same(overLimits, { limit: 10, remaining: 0, reset: firstReset }, 'the 429 carries the headers too')
  t.ok(Math.abs(firstReset - Math.ceil(Date.now() / 1000) - body.retryAfter) <= 1, 'Retry-After is the time left to Reset')
  t.equal(mailCount(s.config, email), 10, 'the 11th request sent no mail: its handler did not run')
})

t.test('strict over RPC: RequestLogin 10 per minute per address, the 11th is RESOURCE_EXHAUSTED and sends nothing', async (t) => {
  const auth = rpcClient(s, AuthService, { clientIp: uniqueClientIp() })
  const email = uniqueEmail('strict-rpc')
  for (let i = 1; i <= 10; i++) {
    let headers = new Headers()
    await auth.requestLogin({ email }, { onHeader: (h) => { headers = h } })
    const { limit, remaining } = limits(t, headers)
    t.equal(limit, 10)
    t.equal(remaining, 10 - i, `call ${i}: Remaining ${10 - i}`)
  }
  const error = await rpcFailure(auth.requestLogin({ email }))
  t.equal(error.code, Code.ResourceExhausted)
  const retryAfter = Number(error.metadata.get('retry-after'))
  t.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`)
  t.match(error.rawMessage, /retry in \d+ seconds/)
  const { limit, remaining, reset } = limits(t, error.metadata)
  t.same({ limit, remaining }, { limit: 10, remaining: 0 })
  t.ok(reset > Date.now() / 1000, 'Reset in the future')
  t.equal(mailCount(s.config, email), 10, 'the 11th call sent no mail')
})

t.test('strict, keyed by user: deletion requests on both transports, two users behind one address counted apart', async (t) => {
  const ip = uniqueClientIp()
  const alice = await signInWithCookie(s)
  const bob = await signInWithCookie(s)
  const requestDeletion = async (cookie: string) => await s.app.inject({ method: 'POST', url: '/api/auth/request-deletion', cookies: { app_session: cookie }, headers: { 'x-forwarded-for': ip } })
  for (let i = 1; i <= 10; i++) t.equal((await requestDeletion(alice.cookie)).statusCode, 200, `alice ${i}`)
  t.equal((await requestDeletion(alice.cookie)).statusCode, 429, 'alice\'s 11th')
  t.equal(mailCount(s.config, alice.email), 11, 'sign-in link + 10 deletion mails: the 11th sent none')
  const bobs = await requestDeletion(bob.cookie)
  t.equal(bobs.statusCode, 200, 'bob, from the same address, has his own count')
  t.equal(bobs.headers['ratelimit-remaining'], '9')

  const carol = await signInWithRpc(s)
  const auth = rpcClient(s, AuthService, { token: carol.accessToken, clientIp: ip })
  for (let i = 1; i <= 10; i++) await auth.requestDeletion({})
  t.equal((await rpcFailure(auth.requestDeletion({}))).code, Code.ResourceExhausted, 'carol\'s 11th call')
  t.equal(mailCount(s.config, carol.email), 11, 'the 11th call sent no mail')
  await rpcClient(s, AuthService, { token: (await signInWithRpc(s)).accessToken, clientIp: ip }).requestDeletion({})
  t.pass('another user on the same address is not limited')
})

t.test('strict, keyed by address: anonymous requests from two addresses are counted apart', async (t) => {
  const first = uniqueClientIp()
  const second = uniqueClientIp()
  const send = async (ip: string) => (await s.app.inject({ method: 'POST', url: '/api/auth/request-login', payload: { email: uniqueEmail() }, headers: { 'x-forwarded-for': ip } })).statusCode
  for (let i = 0; i < 10; i++) await send(first)
  t.equal(await send(first), 429)
  t.equal(await send(second), 200)
})

t.test('read over REST: 300 per minute per user; then 429', async (t) => {
  const session = await signInWithCookie(s) // its sign-in already read /me once
  const me = async () => await s.app.inject({ method: 'GET', url: '/api/auth/me', cookies: { app_session: session.cookie }, headers: { 'x-forwarded-for': uniqueClientIp() } })
  for (let i = 2; i <= 300; i++) {
    const res = await me()
    if (res.statusCode !== 200 || res.headers['ratelimit-remaining'] !== String(300 - i)) t.fail(`request ${i}: ${res.statusCode} remaining ${String(res.headers['ratelimit-remaining'])}`)
  }
  const over = await me()
  t.equal(over.statusCode, 429, 'the 301st, from yet another address, is refused: the user is the key')
  t.equal(over.headers['ratelimit-limit'], '300')
})

t.test('read over RPC: GetMe 300 per minute per user; then RESOURCE_EXHAUSTED', async (t) => {
  const session = await signInWithRpc(s)
  const auth = rpcClient(s, AuthService, { token: session.accessToken, clientIp: uniqueClientIp() })
  for (let i = 1; i <= 300; i++) {
    let remaining = ''
    await auth.getMe({}, { onHeader: (h) => { remaining = h.get('ratelimit-remaining') ?? '' } })
    if (remaining !== String(300 - i)) t.fail(`call ${i}: remaining ${remaining}`)
  }
  const error = await rpcFailure(auth.getMe({}))
  t.equal(error.code, Code.ResourceExhausted)
  t.equal(error.metadata.get('ratelimit-limit'), '300')
})

t.test('refused credentials are counted first and carry the headers: 401s up to the limit, then 429', async (t) => {
  const ip = uniqueClientIp()
  for (let i = 1; i <= 300; i++) {
    const res = await s.app.inject({ method: 'GET', url: '/api/auth/me', headers: { 'x-forwarded-for': ip } })
    if (res.statusCode !== 401 || res.headers['x-ratelimit-remaining'] !== String(300 - i)) t.fail(`request ${i}: ${res.statusCode}`)
  }
  t.equal((await s.app.inject({ method: 'GET', url: '/api/auth/me', headers: { 'x-forwarded-for': ip } })).statusCode, 429)

  const auth = rpcClient(s, AuthService, { token: 'not-a-token', clientIp: uniqueClientIp() })
  for (let i = 1; i <= 300; i++) {
    const error = await rpcFailure(auth.getMe({}))
    if (error.code !== Code.Unauthenticated || error.metadata.get('ratelimit-remaining') !== String(300 - i)) t.fail(`call ${i}: ${Code[error.code]}`)
  }
  t.equal((await rpcFailure(auth.getMe({}))).code, Code.ResourceExhausted)
})

t.test('write on both transports: 100 room creations per minute per user, the 101st creates nothing', async (t) => {
  const session = await signInWithCookie(s)
  const cookies = { app_session: session.cookie }
  for (let i = 1; i <= 100; i++) {
    const res = await s.app.inject({ method: 'POST', url: '/api/rooms', cookies, payload: { name: `write ${i}` } })
    if (res.statusCode !== 201 || res.headers['ratelimit-remaining'] !== String(100 - i)) t.fail(`create ${i}: ${res.statusCode}`)
  }
  const over = await s.app.inject({ method: 'POST', url: '/api/rooms', cookies, payload: { name: 'one too many' } })
  t.equal(over.statusCode, 429)
  t.equal(over.headers['ratelimit-limit'], '100')
  const listed = await s.app.inject({ method: 'GET', url: '/api/rooms?limit=1', cookies })
  t.equal(listed.json().pagination.total, 100, 'exactly 100 rooms exist: the 101st handler did not run')

  const rpcSession = await signInWithRpc(s)
  const rooms = rpcClient(s, RoomsService, { token: rpcSession.accessToken })
  for (let i = 1; i <= 100; i++) await rooms.createRoom({ name: `rpc write ${i}` })
  const error = await rpcFailure(rooms.createRoom({ name: 'one too many' }))
  t.equal(error.code, Code.ResourceExhausted)
  t.equal(error.metadata.get('ratelimit-limit'), '100')
  t.equal((await rooms.listRooms({ limit: 1 })).pagination?.total, 100, 'exactly 100 rooms over RPC too')
})

t.test('canvas on both transports: 300 position updates per minute per user, the 301st moves nothing', async (t) => {
  const session = await signInWithCookie(s)
  const cookies = { app_session: session.cookie }
  const room = (await s.app.inject({ method: 'POST', url: '/api/rooms', cookies, payload: { name: 'canvas tier' } })).json().data
  const spark = (await s.app.inject({ method: 'POST', url: '/api/sparks', cookies, payload: { title: 'tile', roomId: room.id, x: 0, y: 0 } })).json().data
  for (let i = 1; i <= 300; i++) {
    const res = await s.app.inject({ method: 'PATCH', url: '/api/canvas/position', cookies, payload: { tileId: spark.id, x: i === 300 ? 1000 : 0, y: i === 300 ? 1000 : 0 } })
    if (res.statusCode !== 200 || res.headers['ratelimit-remaining'] !== String(300 - i)) t.fail(`move ${i}: ${res.statusCode}`)
  }
  const over = await s.app.inject({ method: 'PATCH', url: '/api/canvas/position', cookies, payload: { tileId: spark.id, x: 5000, y: 5000 } })
  t.equal(over.statusCode, 429)
  t.equal(over.headers['ratelimit-limit'], '300')
  const after = (await s.app.inject({ method: 'GET', url: `/api/sparks/${spark.id}`, cookies })).json().data
  t.same([after.x, after.y], [1000, 1000], 'the tile stays where the 300th update put it')

  const rpcSession = await signInWithRpc(s)
  const rpcRoom = (await rpcClient(s, RoomsService, { token: rpcSession.accessToken }).createRoom({ name: 'canvas tier rpc' })).room!
  const sparks = rpcClient(s, SparksService, { token: rpcSession.accessToken })
  const tile = (await sparks.createSpark({ title: 'tile', content: '', roomId: rpcRoom.id, x: 0, y: 0 })).spark!
  const canvas = rpcClient(s, CanvasService, { token: rpcSession.accessToken })
  for (let i = 1; i <= 300; i++) await canvas.updatePosition({ tileId: tile.id, x: i === 300 ? 1000 : 0, y: i === 300 ? 1000 : 0 })
  const error = await rpcFailure(canvas.updatePosition({ tileId: tile.id, x: 5000, y: 5000 }))
  t.equal(error.code, Code.ResourceExhausted)
  const moved = (await sparks.getSpark({ sparkId: tile.id })).spark!
  t.same([moved.x, moved.y], [1000, 1000], 'the tile stays where the 300th call put it')
})

t.test('expensive over RPC: ImportCV 5 per minute per user', async (t) => {
  const session = await signInWithRpc(s)
  const passport = rpcClient(s, PassportService, { token: session.accessToken })
  for (let i = 1; i <= 5; i++) {
    // An empty file: refused by the method itself, so each call is counted and reaches it.
    const error = await rpcFailure(passport.importCV({}))
    t.equal(error.code, Code.InvalidArgument, `call ${i} reaches the method`)
    t.equal(error.metadata.get('ratelimit-limit'), '5')
  }
  t.equal((await rpcFailure(passport.importCV({}))).code, Code.ResourceExhausted)
})

t.test('exempt: /health and the video/voice token method are never counted and carry no rate-limit headers', async (t) => {
  for (let i = 1; i <= 310; i++) {
    const res = await s.app.inject({ method: 'GET', url: '/health' })
    if (res.statusCode !== 200 || RATE_HEADERS.some((name) => name in res.headers)) t.fail(`health ${i}: ${res.statusCode}`)
  }
  const session = await signInWithRpc(s)
  const rtc = rpcClient(s, RtcService, { token: session.accessToken })
  for (let i = 1; i <= 310; i++) {
    // No RTC configuration here: each call is refused for what it is (an empty request), never counted.
    const error = await rpcFailure(rtc.generateToken({}))
    if (error.code !== Code.InvalidArgument || RATE_HEADERS.some((name) => error.metadata.has(name))) t.fail(`GenerateToken ${i}: ${Code[error.code]}`)
  }
  t.pass('310 calls each, none refused')
})

t.test('standard: RATE_LIMIT_MAX_REQUESTS per RATE_LIMIT_WINDOW_MS; the refused link is not used, and works once the window ends', async (t) => {
  const short = await startApp({ RATE_LIMIT_MAX_REQUESTS: '5', RATE_LIMIT_WINDOW_MS: '3000' }, { database })
  t.teardown(short.close)
  const ip = uniqueClientIp()
  const email = uniqueEmail('standard')
  await short.app.inject({ method: 'POST', url: '/api/auth/request-login', payload: { email }, headers: { 'x-forwarded-for': ip } })
  const { token } = lastMailTo(short.config, email)
  const authorize = async (value: string) => await short.app.inject({ method: 'GET', url: `/api/auth/authorize?token=${value}`, headers: { 'x-forwarded-for': ip } })
  let reset = 0
  for (let i = 1; i <= 5; i++) {
    const res = await authorize('not-a-real-token')
    t.equal(res.statusCode, 400, `request ${i} reaches the handler`)
    t.equal(res.headers['ratelimit-limit'], '5')
    reset = Number(res.headers['ratelimit-reset'])
  }
  const refused = await authorize(token)
  t.equal(refused.statusCode, 429)
  t.ok(Number(refused.headers['retry-after']) <= 3, 'Retry-After within the 3 s window')

  await new Promise((resolve) => setTimeout(resolve, Math.max(0, reset * 1000 - Date.now()) + 50))
  const accepted = await authorize(token)
  t.equal(accepted.statusCode, 302, 'a new window: the link was never used, so it still signs in')
  t.equal(accepted.headers['ratelimit-remaining'], '4', 'the new window started with this request')

  const auth = rpcClient(short, AuthService, { clientIp: uniqueClientIp() })
  const rpcEmail = uniqueEmail('standard-rpc')
  const { pollToken } = await auth.requestLogin({ email: rpcEmail })
  const link = lastMailTo(short.config, rpcEmail).token
  for (let i = 1; i <= 5; i++) t.equal((await rpcFailure(auth.authorizeLogin({ token: 'not-a-real-token' }))).code, Code.InvalidArgument, `call ${i}`)
  const error = await rpcFailure(auth.authorizeLogin({ token: link }))
  t.equal(error.code, Code.ResourceExhausted)
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, Number(error.metadata.get('ratelimit-reset')) * 1000 - Date.now()) + 50))
  await auth.authorizeLogin({ token: link })
  t.ok((await auth.pollLoginStatus({ pollToken })).accessToken, 'the refused call did not use the link; the next window did')
})

t.test('a fixed window started by the first request: with the memory store, time moved past it resets the count', async (t) => {
  const clock = movableClock()
  const memory = await startApp({ REDIS_URL: undefined }, { database, clock })
  t.teardown(memory.close)
  const ip = uniqueClientIp()
  const send = async () => await memory.app.inject({ method: 'POST', url: '/api/auth/request-login', payload: { email: uniqueEmail() }, headers: { 'x-forwarded-for': ip } })
  const first = await send()
  t.equal(Number(first.headers['ratelimit-reset']), Math.ceil((clock.now().getTime() + 60_000) / 1000), 'Reset = first request + 60 s')
  clock.advance(30_000)
  for (let i = 2; i <= 10; i++) await send()
  t.equal((await send()).statusCode, 429)
  clock.advance(29_999)
  t.equal((await send()).statusCode, 429, 'still the first window 1 ms before its end')
  clock.advance(1)
  const fresh = await send()
  t.equal(fresh.statusCode, 200, 'the window ended 60 s after its first request')
  t.equal(fresh.headers['ratelimit-remaining'], '9')
})

t.test('the tier table through the one limiter: every tier\'s limit, exempt unlimited', async (t) => {
  const config = loadConfig(testEnv({ REDIS_URL: undefined, RATE_LIMIT_MAX_REQUESTS: '12' }, { migrated: false }))
  const app = Fastify()
  const limiter = await createLimiter(app, { config, redis: undefined, clock: movableClock() })
  app.get<{ Params: { tier: Tier } }>('/:tier', async (request) => await limiter.hit(request, request.params.tier, 'user_table') ?? 'unlimited')
  t.teardown(async () => { await app.close() })
  const expected: Array<[Tier, number]> = [['strict', 10], ['expensive', 5], ['upload', 20], ['canvas', 300], ['write', 100], ['read', 300], ['standard', 12]]
  for (const [tier, max] of expected) {
    for (let i = 1; i <= max; i++) {
      const decision = (await app.inject(`/${tier}`)).json()
      if (!decision.allowed || decision.limit !== max) t.fail(`${tier} ${i}`)
    }
    t.equal((await app.inject(`/${tier}`)).json().allowed, false, `${tier}: ${max} pass, the next is refused`)
  }
  for (let i = 0; i < 400; i++) if ((await app.inject('/exempt')).body !== 'unlimited') t.fail('exempt counted')
  t.pass('exempt: 400 requests, none counted')
})
