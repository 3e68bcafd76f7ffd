// A stall from outside is visible (issue 28 item 2), on Postgres: a transaction held open in a
// second connection (as `BEGIN; SELECT pg_current_xact_id();` in psql) holds back an event written
// after it began; after 2 s the service logs one warning naming that backend, and /health says
// `events: delayed` with the lag (still 200); when it ends, the event arrives and health recovers.
// The service's own sessions name themselves and end their own idle transactions.
// The Postgres run of the suite only, on a cluster of its own: a held transaction id holds back
// delivery on its whole cluster, which must not be the one other test files share.
import t from 'tap'
import pg from 'pg'
import { sql } from 'kysely'
import { startApp, uniqueClientIp } from './helpers/app.js'
import { recordLogs, WARN } from './helpers/logs.js'
import { ownPostgresUnavailable, startOwnPostgres } from './helpers/own-postgres.js'
import { signInPerson } from './helpers/people.js'
import { openStream, sleep } from './helpers/sse.js'

async function stallTests (): Promise<void> {
  const cluster = await startOwnPostgres()
  t.teardown(cluster.destroy)
  const logs = recordLogs()
  const s = await startApp({ DATABASE_URL: cluster.url, LOG_LEVEL: 'warn', DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: '1500' }, { logStream: logs.stream })
  t.teardown(s.close)

  const health = async (): Promise<{ statusCode: number, body: { status: string, services: Record<string, { status: string, lag?: number }> } }> => {
    const res = await s.app.inject({ method: 'GET', url: '/health' })
    return { statusCode: res.statusCode, body: res.json() }
  }

  t.test('a transaction held open elsewhere: delivery waits, one warning names it, health says delayed; then all resumes', async (t) => {
    const user = await signInPerson(s, 'stalled')
    const opened = await openStream(s.url, { cookie: user.cookie, headers: { 'x-forwarded-for': uniqueClientIp() } })
    t.teardown(() => { opened.close() })
    const before = (await health()).body
    t.equal(before.services.events?.status, 'healthy', 'healthy before')
    t.equal(before.services.events?.lag, undefined, 'with no lag')

    const psql = new pg.Client({ connectionString: cluster.url, application_name: 'stall-test-psql' })
    await psql.connect()
    t.teardown(async () => { await psql.end().catch(() => {}) })
    const pid = (await psql.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]?.pid
    await psql.query('begin')
    await psql.query('select pg_current_xact_id()')
    const from = logs.lines.length
    const heldSince = Date.now()

    t.equal((await user.rest('POST', '/api/rooms', { name: 'written during the stall', isPublic: false })).statusCode, 201, 'the API answers')
    const warning = await logs.waitFor((line) => line.level === WARN && line.msg.startsWith('live events: delivery is held back'), 6_000, from)
    t.ok(Date.now() - heldSince >= 2_000, 'the warning comes once the event has waited 2 s')
    t.match(warning, { blocker: { pid, applicationName: 'stall-test-psql', query: 'select pg_current_xact_id()' } }, 'it names the blocking backend and its query')
    t.ok((warning.lagMs as number) > 2_000, `with the lag (${String(warning.lagMs)} ms)`)
    t.ok(((warning.blocker as { transactionMs: number }).transactionMs) >= 2_000, 'and how long its transaction has been open')
    t.notOk(opened.events().some((m) => m.json.payload?.name === 'written during the stall'), 'the event is held back meanwhile')

    const during = await health()
    t.equal(during.statusCode, 200, 'health still answers 200: the API works')
    t.equal(during.body.status, 'degraded')
    t.equal(during.body.services.events?.status, 'delayed')
    t.ok((during.body.services.events?.lag ?? 0) > 2_000, `events lag ${String(during.body.services.events?.lag)} ms`)
    t.equal(during.body.services.database?.status, 'healthy')

    await sleep(2_500)
    t.equal(logs.matching((line) => line.msg.startsWith('live events: delivery is held back'), from).length, 1, 'one warning in 10 s, however long it lasts')
    await psql.query('commit')
    await opened.waitFor((m) => m.json.payload?.name === 'written during the stall', 3_000)
    t.pass('delivered once the transaction ended, nothing lost')
    const after = await health()
    t.equal(after.body.services.events?.status, 'healthy')
    t.equal(after.body.status, 'healthy')
  })

  t.test('the service\'s sessions name themselves, and an idle transaction of its own is ended by Postgres', async (t) => {
    // Set per transaction (`set local`), so it holds behind a transaction pooler too.
    const settings = await s.app.deps.db.transaction().execute(async (trx) => await sql<{ name: string, timeout: string }>`select current_setting('application_name') as name, current_setting('idle_in_transaction_session_timeout') as timeout`.execute(trx))
    t.same(settings.rows, [{ name: 'canvas-api', timeout: '1500ms' }])
    const user = await signInPerson(s, 'own-idle')
    const opened = await openStream(s.url, { cookie: user.cookie, headers: { 'x-forwarded-for': uniqueClientIp() } })
    t.teardown(() => { opened.close() })
    // A transaction of the service's own pool that takes an id and then waits on nothing the database sees.
    const idle = s.app.deps.db.transaction().execute(async (trx) => {
      await sql`select pg_current_xact_id()`.execute(trx)
      await sleep(4_000)
      await sql`select 1`.execute(trx)
    })
    await sleep(100)
    t.equal((await user.rest('POST', '/api/rooms', { name: 'behind our own idle transaction', isPublic: false })).statusCode, 201)
    await opened.waitFor((m) => m.json.payload?.name === 'behind our own idle transaction', 3_500)
    t.pass('delivered within about DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: Postgres ended the idle transaction')
    await t.rejects(idle, 'the idle transaction failed rather than committing late')
  })
}

const skip = process.env.DATABASE_URL === undefined
  ? 'the Postgres run of the suite only (DATABASE_URL is not set): PGlite runs one transaction at a time'
  : ownPostgresUnavailable()
if (skip !== undefined) t.plan(0, skip)
else await stallTests()
