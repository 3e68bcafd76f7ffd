// RPC sign-in over a real Connect client, in JSON and binary: poll flow, refresh rotation and
// reuse detection, revocation on both transports, access classes, the error model.
import t from 'tap'
import { Code } from '@connectrpc/connect'
import { AuthService, LoginStatus } from '../src/gen/app/auth/v1/auth_pb.js'
import { RoomsService } from '../src/gen/app/rooms/v1/rooms_pb.js'
import { BadRequestSchema } from '../src/gen/google/rpc/error_details_pb.js'
import { lastMailTo, movableClock, startApp, uniqueEmail } from './helpers/app.js'
import { rpcError } from './helpers/people.js'
import { rpcClient, signInWithCookie, signInWithRpc } from './helpers/sign-in.js'

const clock = movableClock()
const s = await startApp({}, { clock })
t.teardown(s.close)

for (const binary of [false, true]) {
  const format = binary ? 'binary' : 'JSON'

  t.test(`${format}: RequestLogin → PENDING → AuthorizeLogin → COMPLETED once, then GetMe`, async (t) => {
    const auth = rpcClient(s, AuthService, { binary })
    const email = uniqueEmail()
    const requested = await auth.requestLogin({ email })
    t.ok(requested.pollToken.length > 20)
    t.match(requested.expiresAt, /\.\d{3}Z$/)
    t.equal((await auth.pollLoginStatus({ pollToken: requested.pollToken })).status, LoginStatus.PENDING)

    const { token } = lastMailTo(s.config, email)
    const info = await auth.getAuthorizeInfo({ token })
    t.equal(info.email, email)
    t.equal(info.newAccount, true)
    t.equal((await auth.authorizeLogin({ token })).email, email)

    const done = await auth.pollLoginStatus({ pollToken: requested.pollToken })
    t.equal(done.status, LoginStatus.COMPLETED)
    t.ok(done.accessToken)
    t.ok(done.refreshToken)
    t.match(done.expiresAt, /\.\d{3}Z$/)
    const ttl = new Date(done.expiresAt ?? '').getTime() - clock.now().getTime()
    t.ok(ttl > 14 * 60_000 && ttl <= 15 * 60_000, 'access tokens live 15 minutes')

    const again = await rpcError(auth.pollLoginStatus({ pollToken: requested.pollToken }))
    t.equal(again.code, Code.InvalidArgument, 'tokens are handed out once')

    const me = await rpcClient(s, AuthService, { binary, token: done.accessToken }).getMe({})
    t.equal(me.user?.email, email)
    t.match(me.user?.id, /^user_/)
  })
}

t.test('the e-mailed link opened in a browser also completes the poll', async (t) => {
  const auth = rpcClient(s, AuthService)
  const email = uniqueEmail()
  const { pollToken } = await auth.requestLogin({ email })
  const { token } = lastMailTo(s.config, email)
  const browser = await s.app.inject({ method: 'GET', url: `/api/auth/authorize?token=${token}` })
  t.equal(browser.statusCode, 302)
  t.equal((await auth.pollLoginStatus({ pollToken })).status, LoginStatus.COMPLETED)
})

t.test('poll errors: unknown token, expired request', async (t) => {
  const auth = rpcClient(s, AuthService)
  t.equal((await rpcError(auth.pollLoginStatus({ pollToken: 'unknown' }))).code, Code.InvalidArgument)
  const { pollToken } = await auth.requestLogin({ email: uniqueEmail() })
  clock.advance(10 * 60_000 + 1)
  const expired = await rpcError(auth.pollLoginStatus({ pollToken }))
  t.equal(expired.code, Code.InvalidArgument)
  t.match(expired.message, /expired/)
})

t.test('RefreshToken rotates; presenting a used refresh token revokes the session', async (t) => {
  const session = await signInWithRpc(s)
  const auth = rpcClient(s, AuthService)
  const rotated = await auth.refreshToken({ refreshToken: session.refreshToken })
  t.not(rotated.refreshToken, session.refreshToken)
  t.not(rotated.accessToken, session.accessToken)
  t.equal((await rpcClient(s, AuthService, { token: rotated.accessToken }).getMe({})).user?.email, session.email)

  const reuse = await rpcError(auth.refreshToken({ refreshToken: session.refreshToken }))
  t.equal(reuse.code, Code.Unauthenticated)
  t.match(reuse.message, /reuse/)
  const revoked = await rpcError(rpcClient(s, AuthService, { token: rotated.accessToken }).getMe({}))
  t.equal(revoked.code, Code.Unauthenticated, 'the whole session is revoked')
  const next = await rpcError(auth.refreshToken({ refreshToken: rotated.refreshToken }))
  t.equal(next.code, Code.Unauthenticated, 'its newest refresh token too')
})

t.test('RefreshToken works with an expired access token', async (t) => {
  const session = await signInWithRpc(s)
  clock.advance(16 * 60_000)
  const expired = await rpcError(rpcClient(s, AuthService, { token: session.accessToken }).getMe({}))
  t.equal(expired.code, Code.Unauthenticated)
  t.match(expired.message, /expired/)
  const rotated = await rpcClient(s, AuthService, { token: session.accessToken }).refreshToken({ refreshToken: session.refreshToken })
  t.equal((await rpcClient(s, AuthService, { token: rotated.accessToken }).getMe({})).user?.email, session.email)
})

t.test('Logout revokes the token on both transports', async (t) => {
  const session = await signInWithRpc(s)
  const client = rpcClient(s, AuthService, { token: session.accessToken })
  t.same(await client.logout({}), { $typeName: 'app.auth.v1.LogoutResponse' })
  t.equal((await rpcError(client.getMe({}))).code, Code.Unauthenticated)
  const rest = await s.app.inject({ method: 'GET', url: '/api/auth/me', headers: { authorization: `Bearer ${session.accessToken}` } })
  t.equal(rest.statusCode, 401)
  t.equal((await rpcError(client.refreshToken({ refreshToken: session.refreshToken }))).code, Code.Unauthenticated)
})

t.test('a cookie session revoked over REST is refused over RPC', async (t) => {
  const { cookie } = await signInWithCookie(s)
  const client = rpcClient(s, AuthService, { token: cookie })
  t.ok((await client.getMe({})).user, 'the session JWT works as a Bearer token')
  await s.app.inject({ method: 'POST', url: '/api/auth/logout', cookies: { app_session: cookie } })
  t.equal((await rpcError(client.getMe({}))).code, Code.Unauthenticated)
})

t.test('access classes: Required without a token, with a forged token; Public needs none', async (t) => {
  const anon = rpcClient(s, AuthService)
  t.equal((await rpcError(anon.getMe({}))).code, Code.Unauthenticated)
  t.equal((await rpcError(anon.logout({}))).code, Code.Unauthenticated)
  t.equal((await rpcError(anon.requestDeletion({}))).code, Code.Unauthenticated)
  t.equal((await rpcError(rpcClient(s, AuthService, { token: 'forged' }).getMe({}))).code, Code.Unauthenticated)
  t.equal((await anon.ping({ message: 'hi' })).message, 'hi')
  const config = await anon.getConfig({})
  t.equal(config.appUrl, 'http://app.test')
  t.equal(config.accessTokenTtlSeconds, 900)
  t.equal(config.rtcEnabled, false, 'false booleans are present')
  const rooms = await rpcError(rpcClient(s, RoomsService).getRoom({ roomId: 'room_x' }))
  t.equal(rooms.code, Code.Unauthenticated)
})

t.test('JSON replies keep false and zero fields', async (t) => {
  const res = await fetch(`${s.url}/rpc/app.auth.v1.AuthService/GetConfig`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
  const body = await res.json() as Record<string, unknown>
  t.equal(body.rtcEnabled, false)
})

t.test('validation error: INVALID_ARGUMENT with a typed BadRequest detail', async (t) => {
  for (const binary of [false, true]) {
    const error = await rpcError(rpcClient(s, AuthService, { binary }).requestLogin({ email: 'nope' }))
    t.equal(error.code, Code.InvalidArgument)
    const [detail] = error.findDetails(BadRequestSchema)
    t.same(detail?.fieldViolations.map((v) => ({ field: v.field, description: v.description })), [{ field: 'email', description: 'must be a valid e-mail address' }])
  }
  const raw = await fetch(`${s.url}/rpc/app.auth.v1.AuthService/RequestLogin`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"email":""}' })
  t.equal(raw.status, 400)
  const body = await raw.json() as { code: string, details: Array<{ type: string, debug: { fieldViolations: unknown[] } }> }
  t.equal(body.code, 'invalid_argument')
  t.equal(body.details[0]?.type, 'google.rpc.BadRequest')
  t.same(body.details[0]?.debug.fieldViolations, [{ field: 'email', description: 'must be a valid e-mail address' }])
})

t.test('malformed requests are invalid_argument, unknown methods unimplemented or 404', async (t) => {
  const bad = await fetch(`${s.url}/rpc/app.auth.v1.AuthService/Ping`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"message":' })
  t.equal(bad.status, 400)
  t.equal((await bad.json() as { code: string }).code, 'invalid_argument')
  const wrongType = await fetch(`${s.url}/rpc/app.auth.v1.AuthService/Ping`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"message":5}' })
  t.equal((await wrongType.json() as { code: string }).code, 'invalid_argument')
  const unknown = await fetch(`${s.url}/rpc/app.auth.v1.AuthService/Nope`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
  t.equal(unknown.status, 404)
})

t.test('account deletion over RPC', async (t) => {
  const session = await signInWithRpc(s)
  const client = rpcClient(s, AuthService, { token: session.accessToken })
  const { expiresAt } = await client.requestDeletion({})
  t.match(expiresAt, /Z$/)
  const { token } = lastMailTo(s.config, session.email)
  await rpcClient(s, AuthService).confirmDeletion({ token })
  t.equal((await rpcError(client.getMe({}))).code, Code.Unauthenticated)
  t.equal((await rpcError(rpcClient(s, AuthService).confirmDeletion({ token }))).code, Code.InvalidArgument)
})
