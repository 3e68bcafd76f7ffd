// Retention (issue 38 items 4 and 9): every table whose rows expire is pruned in short batches until
// none is left past its retention, by one instance at a time. Rows are made the way users make them
// (sign-ins over both transports, logout, a rotated refresh token, a pending link, a deletion
// request, invitations, a video-call uid, a keyed create), the clock is moved past every retention,
// and one run leaves nothing expired while every live row stays. What must be kept is kept: a used
// refresh token until it expires (its reuse still revokes the session after a run), and a revoked
// session's token stays refused once its row is gone. 50,000 expired idempotency keys go in one run
// of short batches; while another instance holds the lock a run prunes nothing.
// On Postgres the test has a database of its own: its clock runs a month ahead, and a run prunes the
// whole database.
import t from 'tap'
import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import pg from 'pg'
import { Code } from '@connectrpc/connect'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/database.js'
import { AuthService } from '../src/gen/app/auth/v1/auth_pb.js'
import { RETENTION_BATCH, pruneExpiredRows, type RetentionReport } from '../src/core/retention/retention.js'
import { RETENTION_LOCK_CLASS } from '../src/core/retention/retention.repository.js'
import { movableClock, startApp, testEnv, uniqueClientIp, uniqueEmail, type TestApp } from './helpers/app.js'
import { rpcError, signInPerson, type Person } from './helpers/people.js'
import { createScratchDatabase } from './helpers/scratch-database.js'
import { rpcClient, signInWithRpc } from './helpers/sign-in.js'

const superuserUrl = process.env.DATABASE_URL
const scratch = superuserUrl === undefined ? undefined : await createScratchDatabase(superuserUrl, 'canvas_retention', { migrated: true })
if (scratch !== undefined) t.teardown(scratch.drop)
const env = {
  ...(scratch === undefined ? {} : { DATABASE_URL: scratch.urlAs() }),
  RTC_APP_ID: randomBytes(16).toString('hex'),
  RTC_APP_CERTIFICATE: randomBytes(16).toString('hex')
}
const clock = movableClock()
const unlimited = { strict: 1e9, write: 1e9, read: 1e9, standard: 1e9, expensive: 1e9 }
// PGlite: the two instances of the last test share one embedded database (on Postgres, one URL).
const shared = scratch === undefined ? { database: await openDatabase(loadConfig(testEnv(env))) } : {}
if (shared.database !== undefined) t.teardown(async () => { await shared.database?.close() })
const s = await startApp(env, { clock, rateLimit: { maxOverride: unlimited }, ...shared })
t.teardown(s.close)
const db = s.app.deps.db
const DAY_MS = 24 * 3600_000

/** The test's own statement of each table's retention at `now`: rows past it, and rows within it. */
function pastRetention (now: Date): Record<string, ReturnType<typeof sql<boolean>>> {
  const ago = (ms: number): Date => new Date(now.getTime() - ms)
  return {
    refresh_tokens: sql<boolean>`expires_at <= ${now} or session_id in (select id from sessions where revoked_at is not null or expires_at <= ${now})`,
    sessions: sql<boolean>`revoked_at is not null or expires_at <= ${now}`,
    login_links: sql<boolean>`expires_at <= ${ago(10 * 60_000)}`,
    deletion_tokens: sql<boolean>`expires_at <= ${now}`,
    office_invites: sql<boolean>`expires_at <= ${ago(DAY_MS)}`,
    office_invite_sends: sql<boolean>`sent_at <= ${ago(DAY_MS)}`,
    rtc_uid_claims: sql<boolean>`expires_at <= ${now}`,
    idempotency_keys: sql<boolean>`expires_at <= ${now}`
  }
}

async function census (now: Date): Promise<Record<string, { past: number, within: number }>> {
  const result: Record<string, { past: number, within: number }> = {}
  for (const [table, past] of Object.entries(pastRetention(now))) {
    const { rows } = await sql<{ past: number, within: number }>`
      select count(*) filter (where ${past})::int as past, count(*) filter (where not (${past}))::int as within from ${sql.table(table)}`.execute(db)
    result[table] = rows[0]!
  }
  return result
}

const removedBy = (report: RetentionReport, table: string): number => report.rules.filter((r) => r.name.startsWith(`${table}:`)).reduce((sum, r) => sum + r.removed, 0)

/** What users leave behind: sessions of both kinds, a rotated refresh token, a logout, links, a
 *  deletion request, an invitation (and its send), a numeric uid in a call, a keyed create. */
async function useTheService (app: TestApp, label: string): Promise<{ person: Person, refreshToken: string }> {
  const person = await signInPerson(app, label)
  const auth = rpcClient(app, AuthService, { clientIp: uniqueClientIp() })
  const rpc = await signInWithRpc(app, uniqueEmail(`${label}-rpc`))
  const rotated = await auth.refreshToken({ refreshToken: rpc.refreshToken })
  const leaving = await signInPerson(app, `${label}-leaving`)
  await leaving.rest('POST', '/api/auth/logout')
  await app.app.inject({ method: 'POST', url: '/api/auth/request-login', payload: { email: uniqueEmail(`${label}-pending`) }, headers: { 'x-forwarded-for': uniqueClientIp() } })
  await person.rest('POST', '/api/auth/request-deletion')
  const room = await person.rest('POST', '/api/rooms', { name: `${label} room` }, { 'idempotency-key': `key-${label}` })
  const roomId = room.json().data.id as string
  await person.rest('POST', '/api/rtc/token', { channelName: roomId, uid: '4242', role: 'PUBLISHER' })
  const office = await person.rest('POST', '/api/offices', { name: `${label} office`, slug: `ret-${label}-${randomBytes(3).toString('hex')}` })
  await person.rest('POST', `/api/offices/${office.json().data.id as string}/invites`, { email: uniqueEmail(`${label}-invitee`), role: 'member' })
  return { person, refreshToken: rotated.refreshToken }
}

t.test('one run: nothing past its retention is left in any table, every live row stays', async (t) => {
  const old = await useTheService(s, 'old')
  clock.advance(32 * DAY_MS) // past every retention: sessions and refresh tokens live 30 days, invitations 7 (+1)
  await useTheService(s, 'new')
  const before = await census(clock.now())
  for (const [table, { past, within }] of Object.entries(before)) {
    t.ok(past > 0, `${table}: ${past} rows past retention to prune`)
    t.ok(within > 0, `${table}: ${within} live rows to keep`)
  }
  const report = await pruneExpiredRows(s.app.deps)
  t.equal(report.yielded, false)
  const after = await census(clock.now())
  for (const [table, { past, within }] of Object.entries(after)) {
    t.equal(past, 0, `${table}: nothing past retention left`)
    t.equal(within, before[table]!.within, `${table}: every live row kept`)
    t.equal(removedBy(report, table), before[table]!.past, `${table}: the report counts what went`)
  }
  t.equal((await old.person.rest('GET', '/api/auth/me')).statusCode, 401, 'an expired session whose row is gone is still refused')
})

t.test('what must be kept is kept: a used refresh token until it expires; a revoked session stays refused without its row', async (t) => {
  const auth = rpcClient(s, AuthService, { clientIp: uniqueClientIp() })
  const rpc = await signInWithRpc(s, uniqueEmail('reuse'))
  const next = await auth.refreshToken({ refreshToken: rpc.refreshToken })
  const leaving = await signInPerson(s, 'revoked')
  t.equal((await leaving.rest('POST', '/api/auth/logout')).statusCode < 300, true)

  await pruneExpiredRows(s.app.deps)
  const reuse = await rpcError(auth.refreshToken({ refreshToken: rpc.refreshToken }))
  t.match(reuse.message, /reuse/, 'the used token, kept, is still recognised as reuse after a run')
  t.equal((await rpcError(auth.refreshToken({ refreshToken: next.refreshToken }))).message.includes('revoked'), true, 'and its session was revoked')

  const report = await pruneExpiredRows(s.app.deps)
  t.ok(removedBy(report, 'sessions') >= 1, 'the revoked sessions go')
  const { count } = await db.selectFrom('sessions').where('revoked_at', 'is not', null).select((eb) => eb.fn.countAll<string>().as('count')).executeTakeFirstOrThrow()
  t.equal(Number(count), 0, 'no revoked session row left')
  t.equal((await leaving.rest('GET', '/api/auth/me')).statusCode, 401, 'the logged-out cookie is still refused')
  t.equal((await rpcError(auth.refreshToken({ refreshToken: next.refreshToken }))).code, Code.Unauthenticated, 'the revoked session\'s refresh token too (unauthenticated)')
})

/** `count` idempotency keys for `userId`, expired a day ago (or live, for a day more). */
async function insertKeys (userId: string, count: number, expired: boolean, label: string): Promise<void> {
  const now = clock.now()
  const expiresAt = new Date(now.getTime() + (expired ? -DAY_MS : DAY_MS))
  await sql`insert into idempotency_keys (user_id, account_id, idem_key, fingerprint, outcome, created_at, expires_at)
    select ${userId}, ${userId}, ${label} || g, 'fingerprint', '{"value":{}}', ${new Date(expiresAt.getTime() - DAY_MS)}, ${expiresAt}
    from generate_series(1, ${count}) as g`.execute(db)
}

async function expiredKeys (): Promise<number> {
  const { count } = await db.selectFrom('idempotency_keys').where('expires_at', '<=', clock.now()).select((eb) => eb.fn.countAll<string>().as('count')).executeTakeFirstOrThrow()
  return Number(count)
}

t.test('50,000 expired idempotency keys: one run leaves none, in batches of at most RETENTION_BATCH rows, each its own transaction', async (t) => {
  const owner = await signInPerson(s, 'bulk')
  await insertKeys(owner.userId, 50_000, true, 'bulk-')
  await insertKeys(owner.userId, 500, false, 'live-')
  const report = await pruneExpiredRows(s.app.deps)
  const rule = report.rules.find((r) => r.name.startsWith('idempotency_keys:'))
  t.equal(rule?.removed, 50_000)
  t.ok((rule?.largestBatch ?? Infinity) <= RETENTION_BATCH, `largest batch ${rule?.largestBatch ?? 0} rows (at most ${RETENTION_BATCH})`)
  t.ok((rule?.batches ?? 0) >= Math.ceil(50_000 / RETENTION_BATCH), `${rule?.batches ?? 0} batches`)
  t.equal(await expiredKeys(), 0, 'no expired key left')
  const { count } = await db.selectFrom('idempotency_keys').where('user_id', '=', owner.userId).select((eb) => eb.fn.countAll<string>().as('count')).executeTakeFirstOrThrow()
  t.equal(Number(count), 500, 'the live keys stay')
})

t.test('two instances never prune at once', async (t) => {
  const other = await startApp(env, { clock, rateLimit: { maxOverride: unlimited }, ...shared })
  t.teardown(other.close)
  const owner = await signInPerson(s, 'two')
  if (scratch !== undefined) {
    // Another instance is pruning: it holds the lock (here, a transaction of the test's that took it).
    await insertKeys(owner.userId, 3_000, true, 'held-')
    const holder = new pg.Client({ connectionString: scratch.urlAs() })
    await holder.connect()
    t.teardown(async () => { await holder.end() })
    await holder.query('begin')
    await holder.query('select pg_advisory_xact_lock($1::int, 1)', [RETENTION_LOCK_CLASS])
    const held = await pruneExpiredRows(other.app.deps)
    t.equal(held.yielded, true, 'a run that finds the lock taken stops')
    t.equal(held.rules.reduce((sum, r) => sum + r.removed, 0), 0, 'having pruned nothing')
    t.equal(await expiredKeys(), 3_000, 'every expired row still there')
    await holder.query('commit')
    t.equal((await pruneExpiredRows(other.app.deps)).rules.reduce((sum, r) => sum + r.removed, 0), 3_000, 'the lock released, the next run prunes')
  }
  // Both instances at once: each batch of either takes the lock, so every row goes exactly once.
  await insertKeys(owner.userId, 20_000, true, 'both-')
  const [a, b] = await Promise.all([pruneExpiredRows(s.app.deps), pruneExpiredRows(other.app.deps)])
  const removed = removedBy(a, 'idempotency_keys') + removedBy(b, 'idempotency_keys')
  t.equal(removed, 20_000, `every expired key removed once (${removedBy(a, 'idempotency_keys')} + ${removedBy(b, 'idempotency_keys')})`)
  t.equal(await expiredKeys(), 0)
})
