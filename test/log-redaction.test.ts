// Tokens never reach logs (issue 26 item 7, DECISIONS §16): the app logs at `info` (as `npm start`
// does) into a stream the test reads, while magic-link, invite, poll and deletion tokens travel the
// ways clients and attackers send them — query strings, the invitation path, percent-encoded and
// mis-cased spellings, a Connect GET call, bodies. No log line may hold any of them; the lines of
// those requests are there, with `[REDACTED]` where the token was.
import t from 'tap'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { redactUrl } from '../src/infra/redact.js'
import { lastMailTo, testEnv, uniqueClientIp, uniqueEmail } from './helpers/app.js'
import { signInPerson } from './helpers/people.js'
import { rpcClient } from './helpers/sign-in.js'
import { AuthService } from '../src/gen/app/auth/v1/auth_pb.js'

const lines: string[] = []
const config = loadConfig(testEnv({ LOG_LEVEL: 'info' }))
const app = await buildApp(config, { logStream: { write: (line) => { lines.push(line) } } })
const url = await app.listen({ port: 0, host: '127.0.0.1' })
t.teardown(async () => { await app.close() })
const s = { app, config, url, close: async () => {} }

t.test('redactUrl: query parameters named …token, Connect GET messages, invitation path segments', async (t) => {
  const cases: Array<[string, string]> = [
    ['/api/auth/authorize?token=abc', '/api/auth/authorize?token=[REDACTED]'],
    ['/api/auth/authorize?a=1&Token=abc&b=2', '/api/auth/authorize?a=1&Token=[REDACTED]&b=2'],
    ['/api/auth/authorize?%74oken=abc', '/api/auth/authorize?%74oken=[REDACTED]'],
    ['/x?pollToken=abc&refresh_token=def', '/x?pollToken=[REDACTED]&refresh_token=[REDACTED]'],
    ['/rpc/app.auth.v1.AuthService/PollLoginStatus?connect=v1&encoding=json&message=%7B%22pollToken%22%3A%22abc%22%7D', '/rpc/app.auth.v1.AuthService/PollLoginStatus?connect=v1&encoding=json&message=[REDACTED]'],
    ['/api/invites/abc', '/api/invites/[REDACTED]'],
    ['/api/invites/accept', '/api/invites/accept'],
    ['/API/Invites/abc/', '/API/Invites/[REDACTED]/'],
    ['/api/%69nvites/abc', '/api/invites/[REDACTED]'],
    ['/api/rooms?page=2&limit=5', '/api/rooms?page=2&limit=5'],
    ['/api/users/display-info?ids=a,b', '/api/users/display-info?ids=a,b']
  ]
  for (const [raw, logged] of cases) t.equal(redactUrl(raw), logged, raw)
})

t.test('no log line holds a token, whichever way it was sent', async (t) => {
  const secrets: string[] = []
  const headers = (): Record<string, string> => ({ 'x-forwarded-for': uniqueClientIp() })

  // Magic links: opened in a browser, asked about as JSON, spelt oddly, used twice.
  for (const spelling of ['token', '%74oken', 'TOKEN']) {
    const email = uniqueEmail('redact')
    await app.inject({ method: 'POST', url: '/api/auth/request-login', payload: { email }, headers: headers() })
    const { token } = lastMailTo(config, email)
    secrets.push(token)
    await app.inject({ method: 'GET', url: `/api/auth/authorize?${spelling}=${token}`, headers: headers() })
    await app.inject({ method: 'GET', url: `/api/auth/authorize?token=${token}&again=1`, headers: { ...headers(), accept: 'application/json' } })
  }

  // A poll token, also as a Connect GET call's message (the gateway refuses GET, and logs the URL).
  const auth = rpcClient(s, AuthService, { clientIp: uniqueClientIp() })
  const { pollToken } = await auth.requestLogin({ email: uniqueEmail('redact-poll') })
  secrets.push(pollToken)
  await auth.pollLoginStatus({ pollToken })
  const message = encodeURIComponent(JSON.stringify({ pollToken }))
  await app.inject({ method: 'GET', url: `/rpc/app.auth.v1.AuthService/PollLoginStatus?connect=v1&encoding=json&message=${message}`, headers: headers() })
  await app.inject({ method: 'GET', url: `/api/auth/authorize?pollToken=${pollToken}`, headers: headers() })

  // Invitations: the public info route, in its spellings, and accepting.
  const owner = await signInPerson(s, 'redact-owner')
  const guest = await signInPerson(s, 'redact-guest')
  const office = (await owner.rest('POST', '/api/offices', { name: 'Redacted', slug: `redact-${Date.now().toString(36)}` })).json().data.id as string
  await owner.rest('POST', `/api/offices/${office}/invites`, { email: guest.email, role: 'member' })
  const invite = lastMailTo(config, guest.email).token
  secrets.push(invite)
  for (const path of [`/api/invites/${invite}`, `/api/%69nvites/${invite}`, `/API/invites/${invite}`, `/api/invites/${invite}/`, `/api/invites/${invite}?token=${invite}`]) {
    await app.inject({ method: 'GET', url: path, headers: headers() })
  }
  t.equal((await guest.rest('POST', '/api/invites/accept', { token: invite })).statusCode, 200, 'accepted')

  // A deletion token: in the body, and pasted into a URL by mistake.
  await guest.rest('POST', '/api/auth/request-deletion')
  const deletion = lastMailTo(config, guest.email).token
  secrets.push(deletion)
  await app.inject({ method: 'POST', url: `/api/auth/confirm-deletion?token=${deletion}`, payload: { token: 'not-it' }, headers: headers() })

  const log = lines.join('')
  t.ok(lines.length > 20, `${lines.length} log lines read`)
  for (const secret of secrets) t.notOk(log.includes(secret), `no line holds ${secret.slice(0, 6)}…`)
  t.ok(lines.some((line) => line.includes('/api/auth/authorize?token=[REDACTED]')), 'the authorize requests are logged, redacted')
  t.ok(lines.some((line) => line.includes('/api/invites/[REDACTED]')), 'the invitation requests are logged, redacted')
  t.ok(lines.some((line) => line.includes('message=[REDACTED]')), 'the Connect GET call is logged, redacted')
})
