// Hostile input on every REST route and every RPC method: malformed JSON, wrong JSON types, wrong
// content types, oversized and odd ids, repeated query parameters, random protobuf bytes. Each gets
// a clear error in the transport's envelope — never a 500 / `internal` — and nothing changes.
import t from 'tap'
import type { DescService } from '@bufbuild/protobuf'
import { Code, createClient } from '@connectrpc/connect'
import { createGrpcWebTransport } from '@connectrpc/connect-node'
import { RoomsService } from '../src/gen/app/rooms/v1/rooms_pb.js'
import { RPC_SERVICES } from '../src/rpc/index.js'
import { startApp } from './helpers/app.js'
import { rpcError, signInPerson } from './helpers/people.js'
import { REST_ROUTES } from './helpers/rest-routes.js'
import { startOidcProvider } from './helpers/oidc-provider.js'

const unlimited = 1_000_000_000
// Admin routes take a token of the identity provider (DECISIONS §12): hostile input reaches them with one.
const provider = await startOidcProvider()
t.teardown(provider.close)
const adminAuthorization = `Bearer ${await provider.sign({ roles: ['super_admin'] })}`
/** The session cookie everywhere; on an admin route, a super admin's token as well. */
const adminHeader = (url: string): Record<string, string> => url.startsWith('/api/admin/') ? { authorization: adminAuthorization } : {}
const s = await startApp({ OIDC_ISSUER: provider.issuer, OIDC_AUDIENCE: provider.audience }, { rateLimit: { maxOverride: { strict: unlimited, expensive: unlimited, upload: unlimited, canvas: unlimited, write: unlimited, read: unlimited, standard: unlimited } } })
t.teardown(s.close)
const owner = await signInPerson(s, 'hostile')
const roomId = (await owner.rest('POST', '/api/rooms', { name: 'Target', isPublic: true })).json().data.id as string
const sparkId = (await owner.rest('POST', '/api/sparks', { roomId, title: 'Target', x: 0, y: 0 })).json().data.id as string

const longId = 'x'.repeat(10_000)
const ids = [longId, 'room_%00', '%E2%98%83', '..%2F..%2Fetc', "room_' or 1=1 --"]
const bodies: Array<{ label: string, payload: string, type: string }> = [
  { label: 'truncated JSON', payload: '{"name":', type: 'application/json' },
  { label: 'a JSON array', payload: '[1,2,3]', type: 'application/json' },
  { label: 'JSON null', payload: 'null', type: 'application/json' },
  { label: 'a JSON string', payload: '"room"', type: 'application/json' },
  { label: 'wrong field types', payload: JSON.stringify({ name: 7, isPublic: 'yes', x: 'NaN', y: null, title: [], roomId: {}, tileId: 1, updates: 'all', algorithm: 9, email: false, token: 5 }), type: 'application/json' },
  { label: 'a prototype key', payload: '{"__proto__":{"admin":true},"constructor":{"prototype":{"x":1}}}', type: 'application/json' },
  { label: 'deep nesting', payload: '{"a":'.repeat(5_000) + '1' + '}'.repeat(5_000), type: 'application/json' },
  { label: 'a huge number', payload: JSON.stringify({ x: 1e308, y: -1e308, limit: 1e308 }).replace('1e+308', '1' + '0'.repeat(400)), type: 'application/json' },
  { label: 'plain text', payload: 'hello', type: 'text/plain' },
  { label: 'a form', payload: 'name=x&isPublic=true', type: 'application/x-www-form-urlencoded' },
  { label: 'an oversized body', payload: JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) }), type: 'application/json' }
]

const routes = REST_ROUTES

function isEnvelope (body: string): boolean {
  try {
    const parsed = JSON.parse(body) as { error?: unknown, message?: unknown }
    return typeof parsed.error === 'string' && typeof parsed.message === 'string'
  } catch {
    return false
  }
}

t.test('REST: hostile bodies, ids and queries get 4xx in the error envelope on every route', async (t) => {
  let requests = 0
  for (const route of routes) {
    const urls = route.url.includes(':')
      ? ids.map((id) => route.url.replace(/:\w+/, encodeURIComponent(id).replaceAll('%25', '%')))
      : [`${route.url}?page=1&page=2&limit=abc&roomId=${encodeURIComponent(longId)}&token=${encodeURIComponent(longId)}&scope=everything`]
    const sends = route.method === 'GET' || route.method === 'DELETE' ? [undefined] : bodies
    for (const url of urls) {
      for (const body of sends) {
        const res = await s.app.inject({
          method: route.method,
          url,
          cookies: { app_session: owner.cookie },
          headers: { ...adminHeader(route.url), ...(body === undefined ? {} : { 'content-type': body.type }) },
          ...(body === undefined ? {} : { payload: body.payload })
        })
        requests++
        const what = `${route.method} ${url.slice(0, 60)} ${body?.label ?? ''}`
        // Every body here is invalid for every route; a GET may ignore query parameters it does not take.
        const refused = res.statusCode >= 400 && res.statusCode < 500 && isEnvelope(res.body)
        if (!(refused || (body === undefined && res.statusCode === 200 && !route.url.includes(':')))) {
          t.fail(`${what}: ${res.statusCode} ${res.body.slice(0, 200)}`)
        }
      }
    }
  }
  t.ok(requests > 200, `${requests} hostile requests, all refused cleanly`)
  // Nothing changed.
  const room = (await owner.rest('GET', `/api/rooms/${roomId}`)).json().data
  t.match(room, { id: roomId, name: 'Target', isPublic: true })
  const spark = (await owner.rest('GET', `/api/sparks/${sparkId}`)).json().data
  t.match(spark, { id: sparkId, title: 'Target', x: 0, y: 0, version: 1 })
})

t.test('a body with many unknown fields is still checked field by field (TypeBox reports at most 8 errors)', async (t) => {
  const unknown = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`extra${i}`, i]))
  const before = (await owner.rest('GET', '/api/rooms?limit=100')).json().pagination.total as number
  const res = await owner.rest('POST', '/api/rooms', { name: 7, isPublic: 'yes', ...unknown })
  t.equal(res.statusCode, 400)
  t.equal(res.json().error, 'ValidationError')
  t.ok(res.json().details.length > 0)
  t.equal((await owner.rest('GET', '/api/rooms?limit=100')).json().pagination.total, before, 'nothing was created')
})

t.test('NUL characters are refused in ids and text, on both transports', async (t) => {
  const byId = await owner.rest('GET', '/api/rooms/room_%00')
  t.equal(byId.statusCode, 400)
  t.same(byId.json().details, [{ field: 'roomId', issue: 'must not contain NUL characters' }])
  const byTitle = await owner.rest('POST', '/api/sparks', { roomId, title: 'a\u0000b', x: 0, y: 0 })
  t.equal(byTitle.statusCode, 400)
  t.same(byTitle.json().details, [{ field: 'title', issue: 'must not contain NUL characters' }])
  const error = await rpcError(owner.rpc(RoomsService).createRoom({ name: 'nul\u0000room' }))
  t.equal(error.code, Code.InvalidArgument)
  t.match(error.rawMessage, /name must not contain NUL characters/)
})

const services: readonly DescService[] = RPC_SERVICES

t.test('RPC: malformed JSON, wrong types and random bytes get a Connect error, never internal, on every method', async (t) => {
  const randomBytes = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f, 0x12, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x0a, 0xff])
  const payloads: Array<{ label: string, payload: string | Buffer, type: string }> = [
    { label: 'truncated JSON', payload: '{"roomId":', type: 'application/json' },
    { label: 'a JSON array', payload: '[]', type: 'application/json' },
    { label: 'wrong field types', payload: JSON.stringify({ roomId: 5, page: 'x', limit: -1, x: 'far', updates: {}, name: {}, email: [] }), type: 'application/json' },
    { label: 'an unknown field', payload: '{"surprise":true}', type: 'application/json' },
    { label: 'random protobuf bytes', payload: randomBytes, type: 'application/proto' },
    { label: 'plain text', payload: 'hello', type: 'text/plain' }
  ]
  let calls = 0
  // Logout last: an accepted call would end the session the other calls use.
  const methods = services.flatMap((service) => service.methods.map((method) => ({ service, method })))
    .sort((a, b) => Number(a.method.name === 'Logout') - Number(b.method.name === 'Logout'))
  for (const { service, method } of methods) {
    for (const { label, payload, type } of payloads) {
      const res = await s.app.inject({
        method: 'POST',
        url: `/rpc/${service.typeName}/${method.name}`,
        headers: { 'content-type': type, authorization: `Bearer ${owner.token}` },
        payload
      })
      calls++
      let code: unknown
      try {
        code = (JSON.parse(res.body) as { code?: unknown }).code
      } catch {
        code = undefined
      }
      if (res.statusCode >= 500 && code !== 'unimplemented' && code !== 'unavailable') {
        t.fail(`${service.typeName}/${method.name} with ${label}: ${res.statusCode} ${res.body.slice(0, 200)}`)
      }
      // Connect ignores unknown JSON fields, so a message without fields may accept any object.
      if (res.statusCode === 200 && (label === 'truncated JSON' || label === 'a JSON array' || label === 'plain text' || label === 'random protobuf bytes')) {
        t.fail(`${service.typeName}/${method.name} with ${label}: accepted`)
      }
    }
  }
  t.ok(calls > 300, `${calls} hostile calls, none answered internal`)
})

t.test('RPC: an unparseable binary body is invalid_argument; a body over 1 MiB is resource_exhausted', async (t) => {
  // A fresh session: the hostile-calls test above ends with an accepted Logout.
  const caller = await signInPerson(s, 'binary')
  const call = async (type: string, payload: string | Buffer): Promise<{ status: number, code: unknown, message: unknown }> => {
    const res = await s.app.inject({ method: 'POST', url: '/rpc/app.rooms.v1.RoomsService/CreateRoom', headers: { 'content-type': type, authorization: `Bearer ${caller.token}` }, payload })
    const body = JSON.parse(res.body) as { code?: unknown, message?: unknown }
    return { status: res.statusCode, code: body.code, message: body.message }
  }
  t.match(await call('application/proto', Buffer.from([0x0a, 0x05, 0x61])), { status: 400, code: 'invalid_argument', message: /cannot decode message app\.rooms\.v1\.CreateRoomRequest from binary/ })
  const huge = 'x'.repeat(1024 * 1024 + 1)
  t.match(await call('application/proto', Buffer.concat([Buffer.from([0x0a, 0x81, 0x80, 0x40]), Buffer.from(huge)])), { status: 429, code: 'resource_exhausted' })
  t.match(await call('application/json', JSON.stringify({ name: huge })), { status: 429, code: 'resource_exhausted' })
  // A valid binary call goes through the same check unchanged.
  const created = await caller.rpc(RoomsService, { binary: true }).createRoom({ name: 'Binary ok', isPublic: false })
  t.equal(created.room?.name, 'Binary ok')
})

t.test('gRPC and gRPC-Web: an unparseable enveloped message is invalid_argument (grpc-status 3), a valid one goes through', async (t) => {
  const envelope = (message: Buffer, flags = 0): Buffer => {
    const head = Buffer.alloc(5)
    head.writeUInt8(flags, 0)
    head.writeUInt32BE(message.length, 1)
    return Buffer.concat([head, message])
  }
  const call = async (type: string, payload: Buffer): Promise<{ status: number, grpcStatus: unknown, grpcMessage: unknown, body: string }> => {
    const res = await s.app.inject({ method: 'POST', url: '/rpc/app.auth.v1.AuthService/GetConfig', headers: { 'content-type': type }, payload })
    // gRPC sends the status in HTTP trailers, gRPC-Web in a trailer frame at the end of the body.
    const status = (name: string): unknown => res.trailers[name] ?? new RegExp(`${name}: ?(\\S+)`).exec(res.body)?.[1]
    return { status: res.statusCode, grpcStatus: status('grpc-status'), grpcMessage: status('grpc-message'), body: res.body }
  }
  for (const type of ['application/grpc', 'application/grpc+proto', 'application/grpc-web', 'application/grpc-web+proto']) {
    t.match(await call(type, envelope(Buffer.from([0xff, 0xff, 0xff]))), { status: 200, grpcStatus: '3', grpcMessage: /cannot%20decode%20message%20app\.auth\.v1\.GetConfigRequest/ }, type)
    // A truncated envelope is Connect's own invalid_argument.
    t.match(await call(type, Buffer.from([0, 0, 0, 0, 16, 1])), { status: 200, grpcStatus: '3' }, `${type}, truncated`)
  }
  // An empty GetConfigRequest: the public configuration, status OK in the gRPC-Web trailer frame.
  const ok = await call('application/grpc-web+proto', envelope(Buffer.alloc(0)))
  t.match(ok, { status: 200, grpcStatus: '0' })
  // A real gRPC-Web client's call goes through the check unchanged.
  const caller = await signInPerson(s, 'grpc-web')
  const transport = createGrpcWebTransport({
    baseUrl: `${s.url}/rpc`,
    httpVersion: '1.1',
    interceptors: [(next) => async (req) => { req.header.set('authorization', `Bearer ${caller.token}`); return await next(req) }]
  })
  const created = await createClient(RoomsService, transport).createRoom({ name: 'Over gRPC-Web', isPublic: false })
  t.equal(created.room?.name, 'Over gRPC-Web')
})

t.test('hostile credentials and headers: 401 (or 400) in the envelope, never a 500', async (t) => {
  const cookies = ['app_session=%E0%A4%A', 'app_session=' + 'a'.repeat(8_000), 'app_session=a.b.c', 'app_session=eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.', 'app_session="unterminated', '=;=;;']
  for (const cookie of cookies) {
    const res = await s.app.inject({ method: 'GET', url: '/api/auth/me', headers: { cookie } })
    t.equal(res.statusCode, 401, cookie.slice(0, 40))
    t.ok(isEnvelope(res.body) || typeof res.json().error === 'string')
  }
  const authorizations = ['Bearer', 'Bearer ', 'Bearer a.b.c', 'Basic dXNlcjpwYXNz', 'Bearer ' + 'x'.repeat(8_000), 'bearer\teyJ']
  for (const authorization of authorizations) {
    const res = await s.app.inject({ method: 'POST', url: '/rpc/app.auth.v1.AuthService/GetMe', headers: { authorization, 'content-type': 'application/json' }, payload: '{}' })
    t.equal(res.statusCode, 401, authorization.slice(0, 40))
    t.equal(res.json().code, 'unauthenticated')
  }
  // A fresh session: the hostile-calls test above ends with an accepted Logout.
  const editor = await signInPerson(s, 'if-match')
  const own = (await editor.rest('POST', '/api/sparks', { roomId, title: 'Mine', x: 0, y: 0 })).json().data.id as string
  for (const [ifMatch, status] of [['"abc"', 400], ['W/', 400], ['"1", "2"', 400], ['9'.repeat(30), 400], ['"2"', 412]] as const) {
    const res = await editor.rest('PATCH', `/api/sparks/${own}`, { title: 'never' }, { 'if-match': ifMatch })
    t.equal(res.statusCode, status, `If-Match ${ifMatch.slice(0, 20)}`)
  }
  t.equal((await editor.rest('GET', `/api/sparks/${own}`)).json().data.title, 'Mine', 'nothing changed')
})
