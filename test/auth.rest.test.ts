// REST sign-in: the magic-link flow with the session cookie, logout, deletion; bad links.
import t from 'tap'
import { Code } from '@connectrpc/connect'
import { createSigner } from 'fast-jwt'
import { AuthService } from '../src/gen/app/auth/v1/auth_pb.js'
import { lastMailTo, mailCount, movableClock, startApp, uniqueClientIp, uniqueEmail } from './helpers/app.js'
import { rpcClient, signInWithCookie } from './helpers/sign-in.js'
import { rpcError } from './helpers/people.js'

const clock = movableClock()
const s = await startApp({}, { clock })
t.teardown(s.close)

// Each request-login comes from its own client address: the file sends more than the `strict`
// tier's 10 per address and minute (the test app trusts X-Forwarded-For from its loopback peer).
const newClient = () => ({ 'x-forwarded-for': uniqueClientIp() })
const requestLogin = async (email: string) =>
  await s.app.inject({ method: 'POST', url: '/api/auth/request-login', payload: { email }, headers: newClient() })
const authorize = async (token: string) =>
  await s.app.inject({ method: 'GET', url: `/api/auth/authorize?token=${encodeURIComponent(token)}` })
const me = async (cookie?: string) =>
  await s.app.inject({ method: 'GET', url: '/api/auth/me', ...(cookie === undefined ? {} : { cookies: { app_session: cookie } }) })

t.test('full magic-link flow: mail, authorize sets the cookie and redirects, me returns the user', async (t) => {
  const email = uniqueEmail('Mixed.Case')
  const requested = await requestLogin(email)
  t.equal(requested.statusCode, 200)
  t.equal(requested.json().data.sent, true)
  const mail = lastMailTo(s.config, email)
  t.match(mail.text, `http://app.test/api/auth/authorize?token=${mail.token}`)
  t.ok(mail.token.length >= 22, 'at least 128 bits of randomness')

  const authorized = await authorize(mail.token)
  t.equal(authorized.statusCode, 302)
  t.equal(authorized.headers.location, 'http://app.test')
  const cookie = authorized.cookies.find((c) => c.name === 'app_session')
  t.ok(cookie, 'session cookie set')
  t.equal(cookie?.httpOnly, true)
  t.equal(cookie?.sameSite, 'Lax')
  t.equal(cookie?.maxAge, 30 * 24 * 3600)
  t.equal(cookie?.path, '/')
  t.notOk(cookie?.secure, 'not Secure outside production')

  const body = (await me(cookie?.value)).json()
  t.equal(body.data.email, email.toLowerCase(), 'address normalised to lower case')
  t.match(body.data.id, /^user_/)
  t.match(body.data.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  t.equal(typeof body.data.displayName, 'string')
  t.equal(body.data.avatarUrl, '')
})

t.test('the cookie is Secure in production', async (t) => {
  const prod = await startApp({ NODE_ENV: 'production' })
  t.teardown(prod.close)
  const email = uniqueEmail()
  await prod.app.inject({ method: 'POST', url: '/api/auth/request-login', payload: { email } })
  const res = await prod.app.inject({ method: 'GET', url: `/api/auth/authorize?token=${lastMailTo(prod.config, email).token}` })
  t.equal(res.cookies.find((c) => c.name === 'app_session')?.secure, true)
})

t.test('a second sign-in of the same address is the same user', async (t) => {
  const email = uniqueEmail()
  const first = await signInWithCookie(s, email)
  const second = await signInWithCookie(s, email)
  t.equal(first.userId, second.userId)
  t.not(first.cookie, second.cookie)
})

t.test('unknown and known addresses get the same answer, and both get a link', async (t) => {
  const known = uniqueEmail('known')
  await signInWithCookie(s, known)
  const a = await requestLogin(known)
  const b = await requestLogin(uniqueEmail('never-seen'))
  t.equal(a.statusCode, b.statusCode)
  t.same(Object.keys(a.json().data).sort(), Object.keys(b.json().data).sort())
  t.equal(mailCount(s.config, known), 2)
})

t.test('a used link is refused', async (t) => {
  const email = uniqueEmail()
  await requestLogin(email)
  const { token } = lastMailTo(s.config, email)
  t.equal((await authorize(token)).statusCode, 302)
  const again = await authorize(token)
  t.equal(again.statusCode, 400)
  t.equal(again.json().error, 'InvalidToken')
  t.match(again.json().message, /already been used/)
  t.notOk(again.cookies.find((c) => c.name === 'app_session'))
})

t.test('an expired link is refused', async (t) => {
  const email = uniqueEmail()
  await requestLogin(email)
  const { token } = lastMailTo(s.config, email)
  clock.advance(10 * 60_000 + 1)
  const res = await authorize(token)
  t.equal(res.statusCode, 400)
  t.match(res.json().message, /expired/)
})

t.test('a forged link is refused', async (t) => {
  const res = await authorize('forged-token-that-was-never-issued')
  t.equal(res.statusCode, 400)
  t.equal(res.json().error, 'InvalidToken')
  const missing = await s.app.inject({ method: 'GET', url: '/api/auth/authorize' })
  t.equal(missing.statusCode, 400)
  t.same(missing.json().details, [{ field: 'token', issue: 'is required' }])
})

t.test('a browser opening a used, expired or forged link is sent back to the app; API clients get the envelope', async (t) => {
  const browser = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8' }
  const open = async (query: string, headers: Record<string, string>) => await s.app.inject({ method: 'GET', url: `/api/auth/authorize${query}`, headers })
  const email = uniqueEmail()
  await requestLogin(email)
  const { token } = lastMailTo(s.config, email)
  const first = await open(`?token=${token}`, browser)
  t.equal(first.statusCode, 302, 'a good link signs the browser in')
  t.equal(first.headers.location, 'http://app.test')
  for (const [label, query] of [['used', `?token=${token}`], ['forged', '?token=never-issued'], ['missing', ''], ['malformed', `?token=${'x'.repeat(600)}`]]) {
    const res = await open(query ?? '', browser)
    t.equal(res.statusCode, 302, `${label}: redirect`)
    t.equal(res.headers.location, 'http://app.test/?signin=invalid', `${label}: to the app`)
    t.notOk(res.cookies.find((c) => c.name === 'app_session'), `${label}: no cookie`)
  }
  const api = await open(`?token=${token}`, { accept: 'application/json' })
  t.equal(api.statusCode, 400)
  t.equal(api.json().error, 'InvalidToken')
  const expiredEmail = uniqueEmail()
  await requestLogin(expiredEmail)
  const expiring = lastMailTo(s.config, expiredEmail).token
  clock.advance(10 * 60_000 + 1)
  t.equal((await open(`?token=${expiring}`, browser)).headers.location, 'http://app.test/?signin=invalid', 'expired: to the app')
})

t.test('two parallel redemptions of one link: exactly one wins', async (t) => {
  const email = uniqueEmail()
  await requestLogin(email)
  const { token } = lastMailTo(s.config, email)
  const results = await Promise.all([authorize(token), authorize(token), authorize(token)])
  t.same(results.map((r) => r.statusCode).sort(), [302, 400, 400])
})

t.test('me without a cookie, with a forged one, with an expired one', async (t) => {
  const none = await me()
  t.equal(none.statusCode, 401)
  t.equal(none.json().error, 'Unauthorized')
  const forged = await me('not.a.jwt')
  t.equal(forged.statusCode, 401)
  t.equal(forged.json().error, 'Unauthorized')

  const { cookie } = await signInWithCookie(s)
  clock.advance(30 * 24 * 3600_000 + 1000)
  const expired = await me(cookie)
  t.equal(expired.statusCode, 401)
  t.equal(expired.json().error, 'Session expired')
})

t.test('a token already accepted stays checked: altered copies are refused, expiry still applies', async (t) => {
  const { cookie } = await signInWithCookie(s)
  t.equal((await me(cookie)).statusCode, 200, 'accepted once (now remembered as verified)')
  const [header, payload, signature] = cookie.split('.') as [string, string, string]
  const flip = (text: string, at: number) => text.slice(0, at) + (text[at] === 'A' ? 'B' : 'A') + text.slice(at + 1)
  const altered = [
    `${header}.${payload}.${flip(signature, 10)}`,
    `${header}.${flip(payload, 10)}.${signature}`,
    `${header}.${payload}.`,
    `${cookie}x`,
    ` ${cookie}`
  ]
  for (const token of altered) {
    const res = await me(token)
    t.equal(res.statusCode, 401, token)
    t.equal(res.json().error, 'Unauthorized')
  }
  t.equal((await me(cookie)).statusCode, 200, 'the original still works')
  clock.advance(30 * 24 * 3600_000 + 1000)
  const expired = await me(cookie)
  t.equal(expired.statusCode, 401)
  t.equal(expired.json().error, 'Session expired')
})

t.test('a correctly signed token with claims this service never issues is refused, not a server error', async (t) => {
  const sign = createSigner({ key: s.config.jwtSecret, algorithm: 'HS256' })
  const exp = Math.floor(clock.now().getTime() / 1000) + 3600
  const odd = [
    { sub: 'user_x', sid: 'ses_\u0000x', exp },
    { sub: 'user_x', sid: 'room_x', exp },
    { sub: 'x\u0000', sid: 'ses_x', exp },
    { sub: 'user_x', sid: `ses_${'x'.repeat(200)}`, exp }
  ]
  for (const claims of odd) {
    const token = sign(claims)
    const res = await me(token)
    t.equal(res.statusCode, 401, JSON.stringify(claims))
    t.equal(res.json().error, 'Unauthorized')
    t.equal((await rpcError(rpcClient(s, AuthService, { token }).getMe({}))).code, Code.Unauthenticated)
  }
})

t.test('logout clears the cookie and revokes the token', async (t) => {
  const { cookie } = await signInWithCookie(s)
  const out = await s.app.inject({ method: 'POST', url: '/api/auth/logout', cookies: { app_session: cookie } })
  t.equal(out.statusCode, 204)
  const cleared = out.cookies.find((c) => c.name === 'app_session')
  t.equal(cleared?.value, '')
  t.ok(cleared?.expires !== undefined && cleared.expires.getTime() <= Date.now())
  const after = await me(cookie)
  t.equal(after.statusCode, 401, 'the same JWT is refused after logout')
  t.equal(after.json().error, 'Unauthorized')
  t.equal((await s.app.inject({ method: 'POST', url: '/api/auth/logout' })).statusCode, 401)
})

t.test('account deletion: request mails a token, confirm removes the account', async (t) => {
  const session = await signInWithCookie(s)
  const other = await signInWithCookie(s, session.email)
  const requested = await s.app.inject({ method: 'POST', url: '/api/auth/request-deletion', cookies: { app_session: session.cookie } })
  t.equal(requested.statusCode, 200)
  t.match(requested.json().data.expiresAt, /Z$/)
  const mail = lastMailTo(s.config, session.email)
  t.match(mail.subject, /deletion/i)

  const wrong = await s.app.inject({ method: 'POST', url: '/api/auth/confirm-deletion', payload: { token: 'nope' } })
  t.equal(wrong.statusCode, 400)
  t.equal((await me(session.cookie)).statusCode, 200, 'a wrong token deletes nothing')

  const confirmed = await s.app.inject({ method: 'POST', url: '/api/auth/confirm-deletion', payload: { token: mail.token } })
  t.equal(confirmed.statusCode, 204)
  t.equal((await me(session.cookie)).statusCode, 401, 'every session of the account is gone')
  t.equal((await me(other.cookie)).statusCode, 401)
  const reused = await s.app.inject({ method: 'POST', url: '/api/auth/confirm-deletion', payload: { token: mail.token } })
  t.equal(reused.statusCode, 400, 'the deletion token is single use')

  const again = await signInWithCookie(s, session.email)
  t.not(again.userId, session.userId, 'signing in again creates a new account')
})

t.test('request-deletion needs a session', async (t) => {
  const res = await s.app.inject({ method: 'POST', url: '/api/auth/request-deletion' })
  t.equal(res.statusCode, 401)
})

t.test('validation errors: one detail per offending field', async (t) => {
  const cases: Array<[unknown, Array<{ field: string, issue: string }>]> = [
    [{}, [{ field: 'email', issue: 'is required' }]],
    [{ email: 'not-an-address' }, [{ field: 'email', issue: 'must be a valid e-mail address' }]],
    [{ email: 42 }, [{ field: 'email', issue: 'must be a valid e-mail address' }]],
    [{ email: 'a@b.co', extra: true }, [{ field: 'extra', issue: 'is not allowed' }]]
  ]
  for (const [payload, details] of cases) {
    const res = await s.app.inject({ method: 'POST', url: '/api/auth/request-login', payload: payload as object, headers: newClient() })
    t.equal(res.statusCode, 400, JSON.stringify(payload))
    t.equal(res.json().error, 'ValidationError')
    t.same(res.json().details, details)
  }
  const notJson = await s.app.inject({ method: 'POST', url: '/api/auth/request-login', headers: { 'content-type': 'application/json', ...newClient() }, payload: '{"email":' })
  t.equal(notJson.statusCode, 400)
  t.equal(notJson.json().error, 'BadRequest')
  const array = await s.app.inject({ method: 'POST', url: '/api/auth/request-login', payload: [] as unknown as object, headers: newClient() })
  t.equal(array.statusCode, 400)
  t.equal(array.json().error, 'ValidationError')
})
