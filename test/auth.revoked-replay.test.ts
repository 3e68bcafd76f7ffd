// A dead credential replayed costs (next to) nothing (issue 28 item 5): a logged-out cookie sent
// 10,000 times, half on the exempt event stream and half on `/api/auth/me`, across two instances of
// one database, is refused every time by a handful of database statements in all, counted through
// the database handle both instances share (every statement the app runs through it). The same for
// a well-signed cookie naming a session the database never had, and a badly signed one never
// reaches the database at all. Runs on PGlite and on Postgres.
import t, { type Test } from 'tap'
import { loadConfig } from '../src/config.js'
import { createTokenCodec } from '../src/core/auth/tokens.js'
import { openDatabase } from '../src/db/database.js'
import { newId } from '../src/infra/ids.js'
import { startApp, testEnv } from './helpers/app.js'
import { signInWithCookie } from './helpers/sign-in.js'

let statements: string[] = []

const database = await openDatabase({ ...loadConfig(testEnv()), onQuery: (statement) => { statements.push(statement) } })
t.teardown(async () => { await database.close() })
const a = await startApp({}, { database })
t.teardown(a.close)
const b = await startApp({}, { database })
t.teardown(b.close)

/** Statements that read or write sessions (the session lookup is `… from sessions join users …`). */
const sessionStatements = (): string[] => statements.filter((s) => /\bsessions\b/.test(s))

async function eventually (check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 5_000
  while (!await check()) {
    if (Date.now() > deadline) throw new Error('timed out')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** `count` requests with `cookie`, alternating the event stream and `/me`, spread over both instances. */
async function replay (cookie: string, count: number): Promise<Map<string, number>> {
  const statuses = new Map<string, number>()
  const one = async (i: number): Promise<void> => {
    const app = i % 4 < 2 ? a : b
    const url = i % 2 === 0 ? '/api/sync/subscribe' : '/api/auth/me'
    const res = await app.app.inject({ method: 'GET', url, cookies: { app_session: cookie }, headers: url === '/api/sync/subscribe' ? { accept: 'text/event-stream' } : {} })
    const key = `${url} ${res.statusCode}`
    statuses.set(key, (statuses.get(key) ?? 0) + 1)
  }
  for (let start = 0; start < count; start += 250) {
    await Promise.all(Array.from({ length: Math.min(250, count - start) }, async (_, k) => { await one(start + k) }))
  }
  return statuses
}

/** `/me` refused for being signed in with nothing (401) or, past the read tier's 300 a minute per address, 429. */
function onlyRefusals (t: Test, statuses: Map<string, number>, count: number): void {
  let total = 0
  for (const [key, n] of statuses) {
    total += n
    t.match(key, /^\/api\/(sync\/subscribe 401|auth\/me (401|429))$/, `${key}: ${n}`)
  }
  t.equal(total, count, 'every request answered')
}

t.test('10,000 replays of a logged-out cookie cost at most a handful of statements', async (t) => {
  const session = await signInWithCookie(a)
  // Both instances hold the session in their caches: each will have to learn of the revocation.
  for (const app of [a, b]) t.equal((await app.app.inject({ method: 'GET', url: '/api/auth/me', cookies: { app_session: session.cookie } })).statusCode, 200)
  t.equal((await a.app.inject({ method: 'POST', url: '/api/auth/logout', cookies: { app_session: session.cookie } })).statusCode, 204)
  // B hears of it over the session signal (milliseconds; until then its cached entry still answers).
  await eventually(async () => (await b.app.inject({ method: 'GET', url: '/api/auth/me', cookies: { app_session: session.cookie } })).statusCode === 401)

  statements = []
  const statuses = await replay(session.cookie, 10_000)
  onlyRefusals(t, statuses, 10_000)
  t.equal(statuses.get('/api/sync/subscribe 401'), 5_000, 'the event stream refused 5,000 times')
  const sessionReads = sessionStatements()
  t.ok(sessionReads.length <= 2, `${sessionReads.length} session statements for 10,000 requests`)
  // Besides the sessions: the live delivery's own polls of the event log (every 2 s per instance, on
  // PGlite through this same handle), which a slow machine stretches over more of them.
  const others = statements.filter((s) => !/\bsessions\b|\bevent_log\b/.test(s))
  t.ok(others.length <= 5, `${others.length} other statements while they ran (${statements.length} in all, the event log's polls included)`)
})

t.test('a well-signed cookie naming a session the database never had: one read, then none', async (t) => {
  const codec = createTokenCodec(a.config.jwtSecret)
  const now = new Date()
  const forged = codec.sign({ userId: newId('user'), sessionId: newId('ses'), expiresAt: new Date(now.getTime() + 3_600_000), issuedAt: now })
  statements = []
  onlyRefusals(t, await replay(forged, 2_000), 2_000)
  t.ok(sessionStatements().length <= 2, `${sessionStatements().length} session reads for 2,000 requests on two instances`)
})

t.test('a badly signed cookie never reaches the database', async (t) => {
  const codec = createTokenCodec('another-secret-another-secret-another-secret')
  const now = new Date()
  statements = []
  const answers = await Promise.all(Array.from({ length: 500 }, async () => {
    const token = codec.sign({ userId: newId('user'), sessionId: newId('ses'), expiresAt: new Date(now.getTime() + 3_600_000), issuedAt: now })
    return (await a.app.inject({ method: 'GET', url: '/api/auth/me', cookies: { app_session: token } })).statusCode
  }))
  t.ok(answers.every((status) => status === 401 || status === 429), 'all refused')
  t.same(sessionStatements(), [], 'no session read for 500 distinct badly signed tokens')
})
