// Admin authentication (issue 32, DECISIONS §12) against a local OIDC provider (helpers/oidc-provider.ts):
// discovery from the issuer, the JWKS fetched once and kept, key rotation picked up without a restart,
// every forgery in the issue refused (401, logged, not written to the audit table), a verified token
// without the role refused (403, audited as denied), a session cookie never admitting anyone, and a
// provider that is down, slow or answering garbage: cached keys keep working, without them 503 at once.
import t from 'tap'
import { startApp, uniqueClientIp, uniqueEmail } from './helpers/app.js'
import { recordLogs } from './helpers/logs.js'
import { hs256WithPublicKey, startOidcProvider, unsignedToken } from './helpers/oidc-provider.js'
import { signInPerson } from './helpers/people.js'
import { adminRoleOf, claimAt } from '../src/core/admin/admin-tokens.js'

const COOLDOWN_MS = 300
const provider = await startOidcProvider()
t.teardown(provider.close)
// The provider starts slow: the first admin requests meet it with no keys cached.
provider.mode = 'slow'
const logs = recordLogs()
const s = await startApp(
  { OIDC_ISSUER: provider.issuer, OIDC_AUDIENCE: provider.audience, LOG_LEVEL: 'info' },
  { logStream: logs.stream, jwksTiming: { fetchTimeoutMs: 1_000, cooldownMs: COOLDOWN_MS } }
)
t.teardown(s.close)

const cooldown = async (): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, COOLDOWN_MS + 50)) }

async function admin (token: string | undefined, url = '/api/admin/users', options: { method?: 'GET' | 'DELETE', cookie?: string, ip?: string } = {}) {
  return await s.app.inject({
    method: options.method ?? 'GET',
    url,
    headers: { 'x-forwarded-for': options.ip ?? uniqueClientIp(), ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
    ...(options.cookie === undefined ? {} : { cookies: { app_session: options.cookie } })
  })
}

/** Rows from one client address (tests on a shared Postgres write rows of their own meanwhile). */
async function auditRowsFrom (clientIp: string): Promise<number> {
  const { count } = await s.app.deps.db.selectFrom('admin_audit_log').where('client_ip', '=', clientIp).select((eb) => eb.fn.countAll<string>().as('count')).executeTakeFirstOrThrow()
  return Number(count)
}

t.test('without cached keys a provider that is slow, down or answering garbage is 503 at once, never a hang', async (t) => {
  for (const mode of ['slow', 'down', 'garbage'] as const) {
    provider.mode = mode
    await cooldown()
    const started = Date.now()
    const res = await admin(await provider.sign({ roles: ['super_admin'] }))
    t.equal(res.statusCode, 503, `${mode}: 503`)
    t.equal(res.json().error, 'ServiceUnavailable', `${mode}: the REST envelope`)
    // The bound is the fetch timeout, far below the provider's 10 s: the request did not wait on it.
    t.ok(Date.now() - started < 8_000, `${mode}: answered without waiting for the provider`)
    const again = await admin(await provider.sign({ roles: ['super_admin'] }))
    t.equal(again.statusCode, 503, `${mode}: within the cooldown, 503 without asking the provider again`)
  }
  t.equal(provider.jwksFetches(), 0, 'no key set was ever served')
})

t.test('discovered from the issuer, fetched once: an admin token lists users', async (t) => {
  provider.mode = 'ok'
  await cooldown()
  for (let i = 0; i < 5; i++) {
    const res = await admin(await provider.sign())
    t.equal(res.statusCode, 200, res.body)
    t.ok(Array.isArray(res.json().data))
    t.match(res.json().pagination, { page: 1, limit: 20 })
  }
  t.equal(provider.jwksFetches(), 1, 'one JWKS fetch for every request')
})

t.test('every forgery is 401, logged and not written to the audit table', async (t) => {
  const person = await signInPerson(s, 'same-mail', uniqueEmail('admin'))
  const now = Math.floor(Date.now() / 1000)
  const ip = uniqueClientIp()
  const logged = logs.lines.length
  const attacks: Array<[string, string | undefined, string?]> = [
    ['no token', undefined],
    ['alg none', unsignedToken({ iss: provider.issuer, aud: provider.audience, sub: 'x', roles: ['super_admin'], exp: now + 300 })],
    ['HS256 keyed with the public key', await hs256WithPublicKey(provider, { iss: provider.issuer, aud: provider.audience, sub: 'x', roles: ['super_admin'], exp: now + 300 })],
    ['a wrong iss', await provider.sign({ iss: 'https://evil.example', roles: ['super_admin'] })],
    ['the issuer with a trailing slash', await provider.sign({ iss: `${provider.issuer}/` })],
    ['no aud', await provider.sign({ aud: undefined })],
    ['a wrong aud', await provider.sign({ aud: 'another-app' })],
    ['expired beyond the tolerance', await provider.sign({ exp: now - 120, iat: now - 420 })],
    ['not yet valid beyond the tolerance', await provider.sign({ nbf: now + 300 })],
    ['no exp', await provider.sign({ exp: undefined })],
    ['no sub', await provider.sign({ sub: undefined })],
    ['signed by a key the provider never published', await provider.signWithForeignKey({ roles: ['super_admin'] })],
    ['a tampered payload', (await provider.sign()).replace(/\.([^.]+)\./, (_, payload: string) => `.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), roles: ['super_admin'] })).toString('base64url')}.`)],
    ['garbage', 'not-a-jwt'],
    ["the service's own RPC access token", person.token],
    ['a session cookie of a user with the admin e-mail', undefined, person.cookie]
  ]
  for (const [label, token, cookie] of attacks) {
    const res = await admin(token, '/api/admin/users', { cookie, ip })
    t.equal(res.statusCode, 401, `${label}: 401`)
    t.equal(res.json().error, 'Unauthorized', `${label}: the REST envelope`)
  }
  t.equal(await auditRowsFrom(ip), 0, 'no audit row for a token that failed verification')
  t.ok(logs.matching((line) => line.msg === 'admin token refused', logged).length >= attacks.length - 2, 'each refused token is logged')
  t.ok(logs.matching((line) => JSON.stringify(line).includes('Bearer ') || JSON.stringify(line).includes(person.token), logged).length === 0, 'no token in the logs')

  const withinTolerance = await admin(await provider.sign({ exp: now - 10, iat: now - 310 }))
  t.equal(withinTolerance.statusCode, 200, 'expired 10 s ago: within the clock tolerance')
})

t.test('an ID token is not an access token: a typ other than at+jwt or JWT, or a nonce, is 401', async (t) => {
  const ip = uniqueClientIp()
  const logged = logs.lines.length
  const refused: Array<[string, string]> = [
    ['typ id+jwt', await provider.sign({ roles: ['super_admin'] }, { typ: 'id+jwt' })],
    ['typ application/id+jwt', await provider.sign({ roles: ['super_admin'] }, { typ: 'application/id+jwt' })],
    ['typ logout+jwt', await provider.sign({ roles: ['super_admin'] }, { typ: 'logout+jwt' })],
    ['typ JOSE', await provider.sign({ roles: ['super_admin'] }, { typ: 'JOSE' })],
    ['typ empty', await provider.sign({ roles: ['super_admin'] }, { typ: '' })],
    ['a nonce (what ID tokens carry)', await provider.sign({ roles: ['super_admin'], nonce: 'n-0S6_WzA2Mj' })],
    ['typ at+jwt with a nonce', await provider.sign({ roles: ['super_admin'], nonce: 'n' }, { typ: 'at+jwt' })]
  ]
  for (const [label, token] of refused) {
    const res = await admin(token, '/api/admin/users', { ip })
    t.equal(res.statusCode, 401, `${label}: 401`)
    t.equal(res.json().error, 'Unauthorized', `${label}: the REST envelope`)
  }
  t.equal(await auditRowsFrom(ip), 0, 'no audit row: the token failed verification')
  t.equal(logs.matching((line) => line.msg === 'admin token refused: not an access token', logged).length, refused.length, 'each is logged')

  const accepted: Array<[string, string | null]> = [['at+jwt', 'at+jwt'], ['application/at+jwt', 'application/at+jwt'], ['AT+JWT', 'AT+JWT'], ['JWT', 'JWT'], ['no typ', null]]
  for (const [label, typ] of accepted) {
    t.equal((await admin(await provider.sign({}, { typ }))).statusCode, 200, `typ ${label}: an access token`)
  }
})

t.test('a verified token without the role is 403 and audited as denied; a session cookie adds nothing', async (t) => {
  const person = await signInPerson(s, 'cookie-admin', uniqueEmail('admin'))
  const sub = `nobody-${Date.now()}`
  const ip = uniqueClientIp()
  const noRole = await provider.sign({ sub, email: person.email, roles: ['viewer'] })
  const res = await admin(noRole, '/api/admin/users', { cookie: person.cookie, ip })
  t.equal(res.statusCode, 403)
  t.equal(res.json().error, 'Forbidden')

  const admin2 = await provider.sign({ sub: `admin-${Date.now()}`, roles: ['admin'] })
  const room = (await person.rest('POST', '/api/rooms', { name: 'Keep me' })).json().data
  const denied = await admin(admin2, `/api/admin/rooms/${room.id as string}`, { method: 'DELETE', ip })
  t.equal(denied.statusCode, 403, 'admin is not super_admin: 403')
  t.equal((await person.rest('GET', `/api/rooms/${room.id as string}`)).statusCode, 200, 'the room is still there')

  const superAdmin = await provider.sign({ sub: 'root', roles: ['super_admin'] })
  const audit = (await admin(superAdmin, `/api/admin/audit?actor=${sub}`)).json()
  t.equal(audit.data.length, 1, 'one row for the refused attempt')
  t.match(audit.data[0], { actor: { sub, email: person.email }, action: 'admin.listUsers', outcome: 'denied', clientIp: ip, details: { required: 'admin', role: null } })
  t.ok(typeof audit.data[0].requestId === 'string' && audit.data[0].requestId !== '', 'with the request id')
  if (res.headers['x-request-id'] !== undefined) t.equal(audit.data[0].requestId, res.headers['x-request-id'], 'the X-Request-Id the client saw')
  const roomRows = (await admin(superAdmin, `/api/admin/audit?targetId=${room.id as string}`)).json().data
  t.match(roomRows, [{ action: 'admin.deleteRoom', outcome: 'denied', targetType: 'room', targetId: room.id, details: { required: 'super_admin', role: 'admin' } }])
})

t.test('key rotation: a new kid is fetched once and works at once; the retired key stops working', async (t) => {
  const oldToken = await provider.sign()
  t.equal((await admin(oldToken)).statusCode, 200)
  await provider.rotate()
  await cooldown()
  const fetches = provider.jwksFetches()
  const res = await admin(await provider.sign())
  t.equal(res.statusCode, 200, 'the new key is accepted without a restart')
  t.equal(provider.jwksFetches(), fetches + 1, 'one refetch for the unknown kid')
  t.equal((await admin(oldToken)).statusCode, 401, 'the key the provider dropped is no longer trusted')
})

t.test('unknown kids refetch at most once per cooldown', async (t) => {
  const tokens = await Promise.all(Array.from({ length: 15 }, async () => await provider.signWithForeignKey()))
  await cooldown()
  const fetches = provider.jwksFetches()
  const started = Date.now()
  const answers = await Promise.all(tokens.map(async (token) => await admin(token)))
  // However slow this machine is, the provider is asked at most once per cooldown that passed.
  const allowed = 1 + Math.floor((Date.now() - started) / COOLDOWN_MS)
  t.same(answers.map((a) => a.statusCode), tokens.map(() => 401))
  const made = provider.jwksFetches() - fetches
  t.ok(made >= 1 && made <= allowed, `${made} fetches for ${tokens.length} unknown kids (at most ${allowed})`)
})

t.test('with keys cached, a provider that is down, slow or answering garbage changes nothing for known keys', async (t) => {
  for (const mode of ['down', 'slow', 'garbage'] as const) {
    provider.mode = mode
    await cooldown()
    t.equal((await admin(await provider.sign())).statusCode, 200, `${mode}: the cached key works`)
    const started = Date.now()
    t.equal((await admin(await provider.signWithForeignKey())).statusCode, 401, `${mode}: an unknown kid is 401`)
    t.ok(Date.now() - started < 8_000, `${mode}: without waiting for the provider`)
    t.equal((await admin(await provider.sign())).statusCode, 200, `${mode}: the cached key still works after the failed refetch`)
  }
  provider.mode = 'ok'
})

t.test('admins are rate-limited under their token sub, wherever they call from', async (t) => {
  const token = await provider.sign({ sub: `counted-${Date.now()}` })
  const first = await admin(token, '/api/admin/users', { ip: uniqueClientIp() })
  const second = await admin(token, '/api/admin/users', { ip: uniqueClientIp() })
  t.equal(first.statusCode, 200)
  t.ok(Number(first.headers['ratelimit-limit']) > 0, 'rate-limit headers')
  t.equal(Number(second.headers['ratelimit-remaining']), Number(first.headers['ratelimit-remaining']) - 1, 'one counter across two addresses')
  const other = await admin(await provider.sign({ sub: `other-${Date.now()}` }), '/api/admin/users')
  t.equal(Number(other.headers['ratelimit-remaining']), Number(first.headers['ratelimit-remaining']), 'another sub counts apart')
})

t.test('roles from a claim path: a name, a dotted path, a list or a space-separated string', async (t) => {
  const payload = { roles: ['admin'], realm_access: { roles: ['super_admin', 'x'] }, 'https://example.com/roles': 'viewer admin', scope: 'a' }
  t.equal(adminRoleOf(claimAt(payload, 'roles')), 'admin')
  t.equal(adminRoleOf(claimAt(payload, 'realm_access.roles')), 'super_admin')
  t.equal(adminRoleOf(claimAt(payload, 'https://example.com/roles')), 'admin')
  t.equal(adminRoleOf(claimAt(payload, 'realm_access.missing')), null)
  t.equal(adminRoleOf(claimAt(payload, 'scope')), null)
  t.equal(adminRoleOf(claimAt({ roles: 'super_admin_not' }, 'roles')), null, 'whole role names only')
})
