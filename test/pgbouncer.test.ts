// Through PgBouncer in transaction mode (issue 40 item 1): two instances whose DATABASE_URL is a
// PgBouncer of the test's own (pool_mode = transaction, 2 server connections) and whose
// DATABASE_DIRECT_URL is Postgres itself, on a database of the test's own so the connections counted
// are theirs. Sign-in, rooms, sparks, a layout, events across the instances, idempotency, an offices
// race and an audited admin action all work there; Postgres holds no more than the pooler's
// connections plus a LISTEN and a health probe per instance; and no session state — a session SET, a named prepared
// statement, a session advisory lock, a LISTEN — is left on the server connections the pooler
// shares, which the last test shows this check would catch. Postgres only (DATABASE_URL).
import t, { type Test } from 'tap'
import pg from 'pg'
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { lastMailTo, startApp, uniqueClientIp, uniqueEmail, type TestApp } from './helpers/app.js'
import { ownPgBouncerUnavailable, startOwnPgBouncer, type OwnPgBouncer } from './helpers/own-pgbouncer.js'
import { startOidcProvider } from './helpers/oidc-provider.js'
import { signInPerson, type Person } from './helpers/people.js'
import { ofType, openStream, sleep, type SseStream } from './helpers/sse.js'

const POOL_SIZE = 2
/** Parameters PgBouncer itself sets on a server connection for each client (its tracked ones). */
const TRACKED = ['application_name', 'client_encoding', 'DateStyle', 'TimeZone', 'standard_conforming_strings']

async function poolerTests (serverUrl: string): Promise<void> {
  const database = `canvas_pgb_${randomUUID().replaceAll('-', '').slice(0, 12)}`
  const urlOf = (name: string): string => { const u = new URL(serverUrl); u.pathname = `/${name}`; return u.toString() }
  const admin = new pg.Client({ connectionString: urlOf('postgres') })
  await admin.connect()
  await admin.query(`create database ${database}`)
  const direct = urlOf(database)
  const bouncer: OwnPgBouncer = await startOwnPgBouncer(direct, { poolSize: POOL_SIZE })
  const provider = await startOidcProvider()
  const env = {
    DATABASE_URL: bouncer.url,
    DATABASE_DIRECT_URL: direct,
    DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: '1500',
    RATE_LIMIT_KEY_PREFIX: `test-${randomUUID()}:`,
    OIDC_ISSUER: provider.issuer,
    OIDC_AUDIENCE: provider.audience
  }
  const a = await startApp(env)
  const b = await startApp(env)
  const inspector = new pg.Client({ connectionString: direct })
  await inspector.connect()
  t.teardown(async () => {
    await a.close()
    await b.close()
    await inspector.end().catch(() => {})
    await bouncer.stop()
    await provider.close()
    await admin.query(`drop database if exists ${database} with (force)`)
    await admin.end()
  })

  /** Backends of the test's database other than the inspector, by application_name. */
  async function backends (): Promise<Array<{ pid: number, app: string }>> {
    const result = await inspector.query<{ pid: number, app: string }>(
      'select pid, application_name as app from pg_stat_activity where datname = $1 and pid <> pg_backend_pid() and backend_type = \'client backend\'', [database])
    return result.rows
  }

  /**
   * What a session of the pooler's server connections still carries once its client is gone: every
   * server connection is taken at once (one open transaction per client, so each lands on its own)
   * and looked at from inside, and advisory locks from outside. Empty when nothing is left.
   */
  async function sessionLeftovers (): Promise<string[]> {
    const clients = Array.from({ length: POOL_SIZE }, () => new pg.Client({ connectionString: bouncer.url, application_name: 'canvas-inspector' }))
    const found: string[] = []
    try {
      for (const client of clients) { client.on('error', () => {}); await client.connect(); await client.query('begin') }
      const pids = new Set<number>()
      for (const client of clients) {
        pids.add((await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid)
        const settings = await client.query<{ name: string }>('select name from pg_settings where source = \'session\' and name <> all($1::text[])', [TRACKED])
        for (const { name } of settings.rows) found.push(`session setting ${name}`)
        const prepared = await client.query<{ name: string }>('select name from pg_prepared_statements')
        for (const { name } of prepared.rows) found.push(`prepared statement ${name}`)
        const channels = await client.query<{ channel: string }>('select pg_listening_channels() as channel')
        for (const { channel } of channels.rows) found.push(`LISTEN ${channel}`)
        const temp = await client.query<{ n: number }>('select count(*)::int as n from pg_class where relnamespace = pg_my_temp_schema()')
        if (temp.rows[0]!.n > 0) found.push('temporary tables')
      }
      if (pids.size !== POOL_SIZE) found.push(`reached ${pids.size} server connections of ${POOL_SIZE}`)
      const locks = await inspector.query<{ n: number }>(
        'select count(*)::int as n from pg_locks l join pg_stat_activity s using (pid) where l.locktype = \'advisory\' and s.datname = $1', [database])
      if (locks.rows[0]!.n > 0) found.push(`${locks.rows[0]!.n} advisory lock(s) held between transactions`)
    } finally {
      for (const client of clients) { await client.query('rollback').catch(() => {}); await client.end().catch(() => {}) }
    }
    return found
  }

  async function stream (t: Test, app: TestApp, person: Person): Promise<SseStream> {
    const opened = await openStream(app.url, { cookie: person.cookie, headers: { 'x-forwarded-for': uniqueClientIp() } })
    t.teardown(() => { opened.close() })
    return opened
  }

  t.test('sign-in, rooms, sparks and a layout on either instance; each event reaches streams on both, exactly once', async (t) => {
    const owner = await signInPerson(a, 'pooled-owner')
    const member = await signInPerson(b, 'pooled-member')
    const ownerOnB = await stream(t, b, owner)
    const memberOnA = await stream(t, a, member)
    const created = await owner.rest('POST', '/api/rooms', { name: 'Through the pooler', isPublic: true })
    t.equal(created.statusCode, 201)
    const roomId = created.json().data.id as string
    await member.rest('GET', `/api/canvas/state?roomId=${roomId}`)
    t.equal((await b.app.inject({ method: 'GET', url: `/api/rooms/${roomId}`, cookies: { app_session: owner.cookie } })).statusCode, 200)

    const titles = Array.from({ length: 12 }, (_, i) => `pooled-${i}`)
    await Promise.all(titles.map(async (title, i) => {
      const res = await (i % 2 === 0 ? a : b).app.inject({ method: 'POST', url: '/api/sparks', cookies: { app_session: owner.cookie }, payload: { title, content: '', roomId, x: i * 10, y: 0 } })
      t.equal(res.statusCode, 201)
    }))
    const layout = await owner.rest('POST', '/api/canvas/layout/compute', { roomId, algorithm: 'grid' })
    t.equal(layout.statusCode, 200)
    for (const on of [ownerOnB, memberOnA]) {
      for (const title of titles) await on.waitFor((m) => m.json.payload?.title === title)
    }
    await sleep(300)
    for (const on of [ownerOnB, memberOnA]) {
      const ids = on.events().filter(ofType('spark:created')).map((m) => m.id ?? '')
      t.equal(ids.length, titles.length, 'every spark once')
      t.equal(new Set(ids).size, titles.length, 'none twice')
    }
  })

  t.test('a keyed create retried on the other instance replays the first answer', async (t) => {
    const owner = await signInPerson(a, 'pooled-keyed')
    const key = randomUUID()
    const first = await owner.rest('POST', '/api/rooms', { name: 'keyed' }, { 'idempotency-key': key })
    const again = await b.app.inject({ method: 'POST', url: '/api/rooms', cookies: { app_session: owner.cookie }, headers: { 'idempotency-key': key }, payload: { name: 'keyed' } })
    t.equal(first.statusCode, 201)
    t.equal(again.statusCode, 201)
    t.equal(again.json().data.id, first.json().data.id, 'one room')
  })

  t.test('two owners demoting each other on two instances at once leave exactly one owner', async (t) => {
    const owner = await signInPerson(a, 'pooled-office-owner')
    const officeId = (await owner.rest('POST', '/api/offices', { name: 'Pooled office', slug: `pooled-${randomUUID().slice(0, 8)}` })).json().data.id as string
    const email = uniqueEmail('pooled-office-admin')
    t.equal((await owner.rest('POST', `/api/offices/${officeId}/invites`, { email, role: 'admin' })).statusCode, 201)
    const other = await signInPerson(b, 'pooled-office-admin', email)
    t.equal((await other.rest('POST', '/api/invites/accept', { token: lastMailTo(a.config, email).token })).statusCode, 200)
    t.equal((await owner.rest('PATCH', `/api/offices/${officeId}/members/${other.userId}`, { role: 'owner' })).statusCode, 200)
    const [x, y] = await Promise.all([
      owner.rest('PATCH', `/api/offices/${officeId}/members/${other.userId}`, { role: 'member' }),
      other.rest('PATCH', `/api/offices/${officeId}/members/${owner.userId}`, { role: 'member' })
    ])
    t.same([x.statusCode, y.statusCode].sort(), [200, 403], 'one demotion wins, the other is refused')
  })

  t.test('a super admin\'s deletion and its audit row commit together', async (t) => {
    const owner = await signInPerson(a, 'pooled-audited')
    const roomId = (await owner.rest('POST', '/api/rooms', { name: 'to be deleted' })).json().data.id as string
    const token = await provider.sign({ sub: `root-${randomUUID()}`, roles: ['super_admin'] })
    const headers = { authorization: `Bearer ${token}`, 'x-forwarded-for': uniqueClientIp() }
    t.equal((await b.app.inject({ method: 'DELETE', url: `/api/admin/rooms/${roomId}`, headers })).statusCode, 204)
    const rows = (await a.app.inject({ method: 'GET', url: `/api/admin/audit?targetId=${roomId}`, headers })).json().data
    t.match(rows, [{ action: 'admin.deleteRoom', targetId: roomId, outcome: 'permitted' }])
  })

  t.test('two instances pruning at once through the pooler: one prunes, and no lock outlives its transaction', async (t) => {
    const tag = `pooled-prune-${randomUUID()}`
    const seed = async (): Promise<void> => {
      await inspector.query(`insert into event_log (tx, type, payload, audience, user_id, created_at)
        select '3'::xid8, 'room:updated', jsonb_build_object('tag', $1::text), '{"kind":"users","userIds":["user_nobody"]}'::jsonb, null, now() - interval '25 hours'
        from generate_series(1, 500)`, [tag])
    }
    const left = async (): Promise<number> => (await inspector.query<{ n: number }>('select count(*)::int as n from event_log where payload->>\'tag\' = $1', [tag])).rows[0]!.n
    await seed()
    const [byA, byB] = await Promise.all([a.app.live.bus.prune(), b.app.live.bus.prune()])
    t.ok(byA + byB >= 500, `pruned ${byA} + ${byB}`)
    t.equal(await left(), 0)
    t.same(await sessionLeftovers(), [], 'the pruning lock went with its transaction')
    for (const app of [b, a, b]) {
      await seed()
      t.ok(await app.app.live.bus.prune() >= 500, 'each instance prunes alone afterwards: no lock left behind on a shared server connection')
      t.equal(await left(), 0)
    }
  })

  t.test('Postgres holds at most the pooler\'s connections plus a LISTEN and a health probe per instance, under load', async (t) => {
    const people = await Promise.all([a, b, a, b].map(async (app, i) => ({ app, person: await signInPerson(app, `pooled-load-${i}`) })))
    let most = 0
    const sampling = { on: true }
    const sampler = (async () => {
      while (sampling.on) {
        most = Math.max(most, (await backends()).length)
        await sleep(10)
      }
    })()
    await Promise.all(people.flatMap(({ person }) => Array.from({ length: 15 }, async (_, i) => {
      const res = await person.rest('POST', '/api/rooms', { name: `load ${i}` })
      t.equal(res.statusCode, 201)
    })))
    sampling.on = false
    await sampler
    const now = await backends()
    t.equal(now.filter((backend) => backend.app === 'canvas-live-listener').length, 2, 'one LISTEN connection per instance, direct')
    // The probe's connection opens with the first /health probe round, so it may not be there yet.
    t.ok(now.filter((backend) => backend.app === 'canvas-health').length <= 2, 'at most one health probe connection per instance, direct')
    t.ok(most <= POOL_SIZE + 4, `at most ${POOL_SIZE} + 4 backends (saw ${most}) for 2 instances of 10 + 3 pooled connections each`)
  })

  t.test('no session state is left on the server connections the pooler shares', async (t) => {
    t.same(await sessionLeftovers(), [])
  })

  t.test('an idle transaction of the service\'s own is ended through the pooler too (set per transaction)', async (t) => {
    const timeout = await a.app.deps.db.transaction().execute(async (trx) =>
      (await sql<{ timeout: string }>`select current_setting('idle_in_transaction_session_timeout') as timeout`.execute(trx)).rows[0]?.timeout)
    t.equal(timeout, '1500ms')
    const idle = a.app.deps.db.transaction().execute(async (trx) => {
      await sql`select pg_current_xact_id()`.execute(trx)
      await sleep(3_000)
      await sql`select 1`.execute(trx)
    })
    await t.rejects(idle, { name: 'DatabaseUnavailableError' }, 'ended by Postgres; the pooler hands the loss on as an outage (503)')
    const owner = await signInPerson(a, 'after-idle')
    t.equal((await owner.rest('POST', '/api/rooms', { name: 'after the idle one' })).statusCode, 201, 'the pool carries on')
  })

  t.test('the check catches what would break behind the pooler: a session SET and a session advisory lock', async (t) => {
    const careless = new pg.Client({ connectionString: bouncer.url })
    careless.on('error', () => {})
    await careless.connect()
    await careless.query('set statement_timeout = 4321')
    await careless.query('select pg_advisory_lock(4321)')
    await careless.end()
    const found = await sessionLeftovers()
    t.ok(found.includes('session setting statement_timeout'), found.join('; '))
    t.ok(found.some((item) => item.includes('advisory lock')), found.join('; '))
    // Clean server connections for whatever runs after: the pooler opens new ones.
    await inspector.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid() and application_name <> \'canvas-live-listener\'', [database])
  })
}

const skip = process.env.DATABASE_URL === undefined
  ? 'the Postgres run of the suite only (DATABASE_URL is not set)'
  : ownPgBouncerUnavailable()
if (skip !== undefined) t.plan(0, skip)
else await poolerTests(process.env.DATABASE_URL!)
