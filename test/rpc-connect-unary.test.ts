// Plain Connect unary calls (POST, application/json or application/proto, uncompressed, no deadline)
// are answered by the gateway's own routes (src/rpc/connect-unary.ts); every other request to the
// same procedure by connect-fastify. Each call here is sent twice, once plain and once with a
// Connect-Timeout-Ms header (a deadline of ten minutes, which changes nothing for these calls but
// sends them to connect-fastify): both must answer the same status, headers and body. Here: which
// route takes which request, and replies that need a set-up (gzip, CORS, a rate limit reached);
// rpc-unary-equivalence.test.ts sends every unary method both ways.
import t, { type Test } from 'tap'
import { gunzipSync } from 'node:zlib'
import { create, toBinary } from '@bufbuild/protobuf'
import { Code } from '@connectrpc/connect'
import type { LightMyRequestResponse } from 'fastify'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { AuthService } from '../src/gen/app/auth/v1/auth_pb.js'
import { GetRoomRequestSchema, RoomsService } from '../src/gen/app/rooms/v1/rooms_pb.js'
import { testEnv, uniqueClientIp, type TestApp } from './helpers/app.js'
import { signInPerson, rpcError } from './helpers/people.js'
import { rpcClient } from './helpers/sign-in.js'

// The app is built by hand (not startApp) to record, before it starts, which route took each call.
const config = loadConfig(testEnv())
const app = await buildApp(config)
const servedBy: Array<'plain' | 'connect-fastify'> = []
// onResponse: it also sees calls the gate refused before any other hook could run.
app.addHook('onResponse', (request, _reply, done) => {
  if (request.url.startsWith('/rpc/')) servedBy.push(request.routeOptions.config.connectUnary === true ? 'plain' : 'connect-fastify')
  done()
})
const s: TestApp = { app, config, url: await app.listen({ port: 0, host: '127.0.0.1' }), close: async () => { await app.close() } }
t.teardown(s.close)

const alice = await signInPerson(s, 'alice')
const bearer = { authorization: `Bearer ${alice.token}` }
const json = { 'content-type': 'application/json' }
const proto = { 'content-type': 'application/proto' }
const rooms = alice.rpc(RoomsService)
const room = (await rooms.createRoom({ name: 'Plain and library', isPublic: false })).room!

/** Headers that must be the same both ways. The remaining count goes down by one between the two
 *  calls, and the seconds to wait may tick over: those are compared by presence. */
const COMPARED_HEADERS = ['content-type', 'content-encoding', 'ratelimit-limit', 'x-ratelimit-limit', 'access-control-allow-origin', 'access-control-expose-headers', 'vary']
const PRESENT_HEADERS = ['ratelimit-remaining', 'ratelimit-reset', 'retry-after']

interface Answer { status: number, headers: Record<string, unknown>, body: Buffer, retryAfter: number }

function answerOf (res: LightMyRequestResponse): Answer {
  const headers: Record<string, unknown> = {}
  for (const name of COMPARED_HEADERS) headers[name] = res.headers[name]
  for (const name of PRESENT_HEADERS) headers[`has ${name}`] = res.headers[name] !== undefined
  const body = res.headers['content-encoding'] === 'gzip' ? gunzipSync(res.rawPayload) : res.rawPayload
  return { status: res.statusCode, headers, body, retryAfter: Number(res.headers['retry-after']) }
}

/** The call sent plain, then with a deadline; both answers, after checking which route took each. */
async function bothWays (tt: Test, procedure: string, headers: Record<string, string>, payload: string | Buffer): Promise<{ plain: Answer, library: Answer }> {
  servedBy.length = 0
  const url = `/rpc/${procedure}`
  const plain = await s.app.inject({ method: 'POST', url, headers, payload })
  const library = await s.app.inject({ method: 'POST', url, headers: { ...headers, 'connect-timeout-ms': '600000' }, payload })
  tt.same(servedBy, ['plain', 'connect-fastify'], `${procedure}: the plain call took the gateway's route, the other connect-fastify's`)
  return { plain: answerOf(plain), library: answerOf(library) }
}

async function sameAnswer (tt: Test, what: string, procedure: string, headers: Record<string, string>, payload: string | Buffer): Promise<Answer> {
  const { plain, library } = await bothWays(tt, procedure, headers, payload)
  tt.equal(plain.status, library.status, `${what}: status`)
  tt.same(plain.headers, library.headers, `${what}: headers`)
  tt.equal(plain.body.toString('base64'), library.body.toString('base64'), `${what}: body`)
  return plain
}

t.test('successful calls answer the same bytes, JSON and binary', async (t) => {
  const me = await sameAnswer(t, 'GetMe JSON', 'app.auth.v1.AuthService/GetMe', { ...json, ...bearer }, '{}')
  t.equal(me.status, 200)
  t.match(JSON.parse(me.body.toString()), { user: { id: alice.userId, email: alice.email } })
  t.equal((await sameAnswer(t, 'GetMe binary, empty body', 'app.auth.v1.AuthService/GetMe', { ...proto, ...bearer }, Buffer.alloc(0))).status, 200)
  const binary = Buffer.from(toBinary(GetRoomRequestSchema, create(GetRoomRequestSchema, { roomId: room.id })))
  t.equal((await sameAnswer(t, 'GetRoom binary', 'app.rooms.v1.RoomsService/GetRoom', { ...proto, ...bearer }, binary)).status, 200)
  const got = await sameAnswer(t, 'GetRoom JSON with charset', 'app.rooms.v1.RoomsService/GetRoom', { 'content-type': 'application/json; charset=utf-8', ...bearer }, JSON.stringify({ roomId: room.id }))
  t.equal(JSON.parse(got.body.toString()).room.id, room.id)
  await sameAnswer(t, 'unknown JSON fields are ignored', 'app.rooms.v1.RoomsService/GetRoom', { ...json, ...bearer }, JSON.stringify({ roomId: room.id, notAField: 1 }))
  await sameAnswer(t, 'a CORS call', 'app.rooms.v1.RoomsService/GetRoom', { ...json, ...bearer, origin: 'https://desktop.example' }, JSON.stringify({ roomId: room.id }))
})

t.test('failed calls answer the same Connect error', async (t) => {
  const cases: Array<[string, string, Record<string, string>, string | Buffer, Code]> = [
    ['no token', 'app.auth.v1.AuthService/GetMe', json, '{}', Code.Unauthenticated],
    ['a forged token', 'app.auth.v1.AuthService/GetMe', { ...json, authorization: 'Bearer not.a.token' }, '{}', Code.Unauthenticated],
    ['an unknown room', 'app.rooms.v1.RoomsService/GetRoom', { ...json, ...bearer }, JSON.stringify({ roomId: 'room_doesnotexist' }), Code.NotFound],
    ['JSON that does not parse', 'app.rooms.v1.RoomsService/GetRoom', { ...json, ...bearer }, '{"roomId":', Code.InvalidArgument],
    ['a field of the wrong type', 'app.rooms.v1.RoomsService/GetRoom', { ...json, ...bearer }, '{"roomId":5}', Code.InvalidArgument],
    ['binary bytes that are no message', 'app.rooms.v1.RoomsService/GetRoom', { ...proto, ...bearer }, Buffer.from([0x0f, 0xff, 0x00, 0x12]), Code.InvalidArgument],
    ['a validation error with field violations', 'app.rooms.v1.RoomsService/CreateRoom', { ...json, ...bearer }, JSON.stringify({ name: '' }), Code.InvalidArgument],
    ['a body over 1 MiB', 'app.rooms.v1.RoomsService/GetRoom', { ...json, ...bearer }, JSON.stringify({ roomId: 'x'.repeat(1024 * 1024) }), Code.ResourceExhausted],
    // PassportService reads up to 7 MiB (ImportCV's file, in base64 JSON).
    ['a passport body over 1 MiB, under 7 MiB', 'app.passport.v1.PassportService/AddSkill', { ...json, ...bearer }, JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) }), Code.InvalidArgument],
    ['a passport body over 7 MiB', 'app.passport.v1.PassportService/ImportCV', { ...json, ...bearer }, JSON.stringify({ filename: 'x'.repeat(7 * 1024 * 1024) }), Code.ResourceExhausted]
  ]
  for (const [what, procedure, headers, payload, code] of cases) {
    const answer = await sameAnswer(t, what, procedure, headers, payload)
    t.equal(JSON.parse(answer.body.toString()).code, codeName(code), `${what}: ${codeName(code)}`)
  }
})

t.test('a reply of 1 KiB or more is gzipped for a client that accepts it, both ways', async (t) => {
  for (let i = 0; i < 8; i++) await rooms.createRoom({ name: `Room with a name long enough to add up ${i}`, description: 'd'.repeat(100), isPublic: false })
  const { plain } = await bothWays(t, 'app.rooms.v1.RoomsService/ListRooms', { ...json, ...bearer, 'accept-encoding': 'gzip, br' }, '{}')
  t.equal(plain.headers['content-encoding'], 'gzip')
  await sameAnswer(t, 'ListRooms gzipped', 'app.rooms.v1.RoomsService/ListRooms', { ...json, ...bearer, 'accept-encoding': 'gzip' }, '{}')
  t.equal((await sameAnswer(t, 'ListRooms, identity asked', 'app.rooms.v1.RoomsService/ListRooms', { ...json, ...bearer, 'accept-encoding': 'identity' }, '{}')).headers['content-encoding'], undefined)
})

t.test('a rate-limited call is refused the same way, with Retry-After', async (t) => {
  // RequestLogin is in the strict tier, counted per client address.
  const headers = { ...json, 'x-forwarded-for': uniqueClientIp() }
  let refused: Answer | undefined
  for (let i = 0; i < 50 && refused === undefined; i++) {
    const { plain, library } = await bothWays(t, 'app.auth.v1.AuthService/RequestLogin', headers, JSON.stringify({ email: 'nobody@example.test' }))
    if (plain.status === 429 && library.status === 429) {
      t.same(plain.headers, library.headers, 'refusal headers')
      t.ok(Math.abs(plain.retryAfter - library.retryAfter) <= 1, 'the same wait, give or take the second that passed')
      const withoutSeconds = (answer: Answer): string => answer.body.toString().replace(/\d+/g, 'N')
      t.equal(withoutSeconds(plain), withoutSeconds(library), 'refusal body (the seconds to wait aside)')
      refused = plain
    }
  }
  t.ok(refused, 'the limit was reached')
  t.equal(JSON.parse(refused?.body.toString() ?? '{}').code, 'resource_exhausted')
  t.ok(refused !== undefined && refused.retryAfter > 0, 'Retry-After is a number of seconds')
})

t.test('what the plain routes leave to connect-fastify', async (t) => {
  const url = '/rpc/app.rooms.v1.RoomsService/GetRoom'
  const payload = JSON.stringify({ roomId: room.id })
  const others: Array<[string, Record<string, string>, string]> = [
    ['a deadline', { ...json, 'connect-timeout-ms': '5000' }, 'POST'],
    ['a compressed body', { ...json, 'content-encoding': 'gzip' }, 'POST'],
    ['a Connect streaming content type', { 'content-type': 'application/connect+json' }, 'POST'],
    ['gRPC-Web', { 'content-type': 'application/grpc-web+json' }, 'POST'],
    ['JSON in another charset', { 'content-type': 'application/json; charset=latin1' }, 'POST'],
    ['GET', {}, 'GET']
  ]
  for (const [what, headers, method] of others) {
    servedBy.length = 0
    await s.app.inject({ method: method as 'GET' | 'POST', url, headers: { ...headers, ...bearer }, ...(method === 'POST' ? { payload } : {}) })
    t.same(servedBy, ['connect-fastify'], what)
  }
  servedBy.length = 0
  await s.app.inject({ method: 'POST', url, headers: { ...json, ...bearer, 'content-encoding': 'identity' }, payload })
  t.same(servedBy, ['plain'], 'Content-Encoding: identity is no compression')
})

t.test('Connect clients take the plain route; with a timeout, connect-fastify; the answers agree', async (t) => {
  for (const binary of [false, true]) {
    servedBy.length = 0
    const client = alice.rpc(RoomsService, { binary })
    const plain = await client.getRoom({ roomId: room.id })
    const withDeadline = await client.getRoom({ roomId: room.id }, { timeoutMs: 60_000 })
    t.same(servedBy, ['plain', 'connect-fastify'], binary ? 'binary' : 'JSON')
    t.same(plain, withDeadline, `${binary ? 'binary' : 'JSON'}: the same room`)
    const missing = await rpcError(client.getRoom({ roomId: 'room_doesnotexist' }))
    t.equal(missing.code, Code.NotFound)
  }
  const anonymous = rpcClient(s, AuthService)
  t.equal((await rpcError(anonymous.getMe({}))).code, Code.Unauthenticated)
})

function codeName (code: Code): string {
  return Code[code].replace(/[A-Z]/g, (c, i: number) => (i === 0 ? '' : '_') + c.toLowerCase())
}
