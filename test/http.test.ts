// The HTTP surface: health, unknown routes, CORS on both gateways, EXPOSE splits, failing dependencies.
import t from 'tap'
import { create, toBinary } from '@bufbuild/protobuf'
import { Code, ConnectError } from '@connectrpc/connect'
import { AuthService, PingRequestSchema } from '../src/gen/app/auth/v1/auth_pb.js'
import { RoomsService } from '../src/gen/app/rooms/v1/rooms_pb.js'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/database.js'
import { startApp, testEnv, uniqueClientIp, uniqueEmail } from './helpers/app.js'
import { startFailingSmtp, startFakeSmtp } from './helpers/fake-smtp.js'
import { rpcError } from './helpers/people.js'
import { rpcClient, signInWithCookie } from './helpers/sign-in.js'

const s = await startApp()
t.teardown(s.close)

t.test('GET /health: the REST report with every part measured', async (t) => {
  const res = await s.app.inject({ method: 'GET', url: '/health' })
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.equal(body.status, 'healthy')
  t.match(body.timestamp, /\.\d{3}Z$/)
  for (const part of ['database', 'cache', 'storage']) {
    t.equal(body.services[part].status, 'healthy', part)
    t.type(body.services[part].latency, 'number')
  }
  t.type(body.uptime, 'number')
})

t.test('unknown routes answer JSON 404, wrong methods JSON 405', async (t) => {
  const missing = await s.app.inject({ method: 'GET', url: '/api/nothing-here' })
  t.equal(missing.statusCode, 404)
  t.equal(missing.json().error, 'NotFound')
  t.match(missing.headers['content-type'], /application\/json/)
  const wrong = await s.app.inject({ method: 'PUT', url: '/api/auth/me' })
  t.equal(wrong.statusCode, 405)
  t.equal(wrong.json().error, 'MethodNotAllowed')
  t.match(wrong.headers.allow, /GET/)
})

t.test('errors raised before any route answer in the envelope of the path\'s transport', async (t) => {
  const { cookie } = await signInWithCookie(s)
  const rest = async (url: string) => await s.app.inject({ method: 'GET', url, cookies: { app_session: cookie } })
  const rpc = async (url: string, contentType: string, payload: string) => await s.app.inject({ method: 'POST', url, headers: { 'content-type': contentType }, payload })

  for (const url of ['/api/rooms/%zz', '/api/rooms/%E0%A4%A', '/api/sparks/%']) {
    const res = await rest(url)
    t.equal(res.statusCode, 400, url)
    t.same(res.json(), { error: 'BadRequest', message: 'The path is not valid percent-encoding.' })
  }
  const badRpcPath = await rpc('/rpc/%zz/Ping', 'application/json', '{}')
  t.equal(badRpcPath.statusCode, 400)
  t.same(badRpcPath.json(), { code: 'invalid_argument', message: 'The path is not valid percent-encoding.' })

  // Ids up to the schemas' 200 characters reach the core, as through RPC: an unknown one is 404.
  const longId = `room_${'x'.repeat(195)}`
  t.equal((await rest(`/api/rooms/${longId}`)).statusCode, 404)
  t.equal((await rpcError(rpcClient(s, RoomsService, { token: cookie }).getRoom({ roomId: longId }))).code, Code.NotFound)
  const tooLong = await rest(`/api/rooms/${longId}x`)
  t.equal(tooLong.statusCode, 400)
  t.same(tooLong.json(), { error: 'BadRequest', message: 'A path segment is longer than 200 characters.' })

  const unknownProcedure = await rpc('/rpc/app.auth.v1.AuthService/Nope', 'application/json', '{}')
  t.equal(unknownProcedure.statusCode, 404)
  t.same(unknownProcedure.json(), { code: 'unimplemented', message: 'No procedure POST /rpc/app.auth.v1.AuthService/Nope' })
  const form = await rpc('/rpc/app.auth.v1.AuthService/Ping', 'application/x-www-form-urlencoded', 'message=hi')
  t.equal(form.statusCode, 415)
  t.match(form.json(), { code: 'invalid_argument', message: /application\/x-www-form-urlencoded is not served here/ })
  const huge = await rpc('/rpc/app.auth.v1.AuthService/Ping', 'text/plain', 'x'.repeat(2_000_000))
  t.equal(huge.statusCode, 413)
  t.equal(huge.json().code, 'resource_exhausted')

  // Outside /api and /rpc too: the REST envelope, never Fastify's own error body.
  for (const url of ['/health', '/nothing-here']) {
    const query = await s.app.inject({ method: 'QUERY', url })
    t.equal(query.statusCode, 400, url)
    t.same(Object.keys(query.json()).sort(), ['error', 'message'])
  }
})

t.test('REST CORS: only the configured origin, with credentials', async (t) => {
  const allowed = await s.app.inject({
    method: 'OPTIONS',
    url: '/api/auth/me',
    headers: { origin: 'http://app.test', 'access-control-request-method': 'GET' }
  })
  t.equal(allowed.statusCode, 204)
  t.equal(allowed.headers['access-control-allow-origin'], 'http://app.test')
  t.equal(allowed.headers['access-control-allow-credentials'], 'true')
  const foreign = await s.app.inject({
    method: 'OPTIONS',
    url: '/api/auth/me',
    headers: { origin: 'http://evil.test', 'access-control-request-method': 'GET' }
  })
  t.not(foreign.headers['access-control-allow-origin'], 'http://evil.test')
  t.not(foreign.headers['access-control-allow-origin'], '*')
})

t.test('REST CORS as a browser on CORS_ORIGIN sends it: credentialed PATCH and DELETE preflights, exposed headers', async (t) => {
  for (const method of ['PATCH', 'DELETE']) {
    const preflight = await s.app.inject({
      method: 'OPTIONS',
      url: '/api/sparks/spark_x',
      headers: { origin: 'http://app.test', 'access-control-request-method': method, 'access-control-request-headers': 'content-type,if-match' }
    })
    t.equal(preflight.statusCode, 204, method)
    t.equal(preflight.headers['access-control-allow-origin'], 'http://app.test')
    t.equal(preflight.headers['access-control-allow-credentials'], 'true')
    t.match(preflight.headers['access-control-allow-methods'], new RegExp(`\\b${method}\\b`), `${method} allowed`)
    const allowedHeaders = String(preflight.headers['access-control-allow-headers']).toLowerCase()
    for (const header of ['content-type', 'if-match', 'idempotency-key', 'last-event-id', 'x-request-id']) t.ok(allowedHeaders.includes(header), `${method}: ${header} allowed`)
  }
  const actualApi = await s.app.inject({ method: 'GET', url: '/api/auth/me', headers: { origin: 'http://app.test' } })
  const exposed = String(actualApi.headers['access-control-expose-headers']).toLowerCase()
  for (const header of ['etag', 'retry-after', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'x-request-id']) {
    t.ok(exposed.includes(header), `${header} exposed`)
  }
  t.equal(actualApi.headers['access-control-allow-origin'], 'http://app.test')
})

t.test('RPC CORS: every origin, never credentials', async (t) => {
  const res = await s.app.inject({
    method: 'OPTIONS',
    url: '/rpc/app.auth.v1.AuthService/GetMe',
    headers: { origin: 'http://any.test', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,authorization,connect-protocol-version' }
  })
  t.equal(res.statusCode, 204)
  t.equal(res.headers['access-control-allow-origin'], '*')
  t.notOk(res.headers['access-control-allow-credentials'])
  t.match(res.headers['access-control-allow-headers'], /authorization/i)
})

t.test('many RPC calls in flight at once: no "possible memory leak" warning from their shared shutdown signal', async (t) => {
  // A slow mail server holds each sign-in call inside its handler, so all of them are in flight together.
  const smtp = await startFakeSmtp({ accept: true, delayMs: 300 })
  t.teardown(smtp.close)
  const slow = await startApp({ SMTP_URL: smtp.url })
  t.teardown(slow.close)
  const warnings: string[] = []
  const onWarning = (warning: Error): void => { warnings.push(warning.name) }
  process.on('warning', onWarning)
  t.teardown(() => { process.off('warning', onWarning) })
  const calls = Array.from({ length: 15 }, async () => await rpcClient(slow, AuthService, { clientIp: uniqueClientIp() }).requestLogin({ email: uniqueEmail() }))
  t.equal((await Promise.all(calls)).length, 15, 'every call answered')
  await new Promise((resolve) => setImmediate(resolve))
  t.same(warnings.filter((name) => name === 'MaxListenersExceededWarning'), [])
})

t.test('deadlines longer than a Node timer holds are lowered to it: the call runs, no TimeoutOverflowWarning', async (t) => {
  const warnings: string[] = []
  const onWarning = (warning: Error): void => { warnings.push(warning.name) }
  process.on('warning', onWarning)
  t.teardown(() => { process.off('warning', onWarning) })
  const ping = async (headers: Record<string, string>, payload: string | Buffer) =>
    await s.app.inject({ method: 'POST', url: '/rpc/app.auth.v1.AuthService/Ping', headers: { 'x-forwarded-for': uniqueClientIp(), ...headers }, payload })

  const connect = await ping({ 'content-type': 'application/json', 'connect-timeout-ms': '9999999999' }, '{"message":"late"}')
  t.equal(connect.statusCode, 200)
  t.equal(connect.json().message, 'late')
  const message = Buffer.from(toBinary(PingRequestSchema, create(PingRequestSchema, { message: 'late' })))
  const envelope = Buffer.concat([Buffer.from([0, 0, 0, 0, message.length]), message])
  const grpcWeb = await ping({ 'content-type': 'application/grpc-web+proto', 'grpc-timeout': '99999999H' }, envelope)
  t.equal(grpcWeb.statusCode, 200)
  t.match(grpcWeb.rawPayload.toString('latin1'), /grpc-status:\s*0/)
  t.equal((await ping({ 'content-type': 'application/json', 'connect-timeout-ms': '99999999999' }, '{}')).json().code, 'invalid_argument', 'eleven digits are still refused')
  await new Promise((resolve) => setImmediate(resolve))
  t.same(warnings.filter((name) => name === 'TimeoutOverflowWarning'), [])
})

t.test('EXPOSE=public serves the RPC gateway and /health only', async (t) => {
  const pub = await startApp({ EXPOSE: 'public' })
  t.teardown(pub.close)
  t.equal((await pub.app.inject({ method: 'POST', url: '/api/auth/request-login', payload: { email: uniqueEmail() } })).statusCode, 404)
  const health = (await pub.app.inject({ method: 'GET', url: '/health' })).json()
  t.same(Object.keys(health.services).sort(), ['cache', 'database'])
  t.equal(health.uptime, undefined)
  t.equal((await rpcClient(pub, AuthService).ping({ message: 'x' })).message, 'x')
})

t.test('EXPOSE=internal serves the REST API and /health only', async (t) => {
  const internal = await startApp({ EXPOSE: 'internal' })
  t.teardown(internal.close)
  const rpc = await fetch(`${internal.url}/rpc/app.auth.v1.AuthService/Ping`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
  t.equal(rpc.status, 404)
  await signInWithCookie(internal)
  t.equal((await internal.app.inject({ method: 'GET', url: '/health' })).json().services.storage.status, 'healthy')
})

t.test('a failing SMTP server: 503 / UNAVAILABLE, and the unsent link is not usable', async (t) => {
  const smtp = await startFailingSmtp()
  t.teardown(smtp.close)
  const m = await startApp({ SMTP_URL: smtp.url })
  t.teardown(m.close)
  const res = await m.app.inject({ method: 'POST', url: '/api/auth/request-login', payload: { email: uniqueEmail() } })
  t.equal(res.statusCode, 503)
  t.equal(res.json().error, 'ServiceUnavailable')
  t.equal(smtp.received.length, 1, 'the service did try to send')
  const token = /token=3D([A-Za-z0-9_-]+)|token=([A-Za-z0-9_-]+)/.exec(smtp.received[0]?.replace(/=\r\n/g, '') ?? '')
  const value = token?.[1] ?? token?.[2]
  t.ok(value, 'the refused message carried a link')
  const authorize = await m.app.inject({ method: 'GET', url: `/api/auth/authorize?token=${value ?? ''}` })
  t.equal(authorize.statusCode, 400, 'the token was removed when delivery failed')

  try {
    await rpcClient(m, AuthService).requestLogin({ email: uniqueEmail() })
    t.fail('expected UNAVAILABLE')
  } catch (error) {
    t.equal(ConnectError.from(error).code, Code.Unavailable)
  }
})

t.test('a dead database: health is unhealthy (503), requests get a masked 500', async (t) => {
  // The instance's database is shut for everything it holds — the request pool (or PGlite) and, on
  // Postgres, /health's connection of its own — while other test files are unaffected.
  const database = await openDatabase(loadConfig(testEnv()))
  const d = await startApp({}, { database })
  const { cookie } = await signInWithCookie(d)
  await database.close()
  const health = await d.app.inject({ method: 'GET', url: '/health' })
  t.equal(health.statusCode, 503)
  t.equal(health.json().status, 'unhealthy')
  t.equal(health.json().services.database.status, 'unhealthy')
  // Reads that need the database (the session itself is cached, so authentication still passes).
  const rooms = await d.app.inject({ method: 'GET', url: '/api/rooms', cookies: { app_session: cookie } })
  t.equal(rooms.statusCode, 500)
  t.same(rooms.json(), { error: 'InternalServerError', message: 'An unexpected error occurred.', requestId: rooms.headers['x-request-id'] }, 'with the request id to quote (DECISIONS §15)')
  try {
    await rpcClient(d, RoomsService, { token: cookie }).listRooms({})
    t.fail('expected INTERNAL')
  } catch (error) {
    const e = ConnectError.from(error)
    t.equal(e.code, Code.Internal)
    t.equal(e.rawMessage, 'Internal error', 'no internal text leaks')
  }
  await d.close().catch(() => {})
})
