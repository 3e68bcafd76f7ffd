// /health measures the database, not the pool (DECISIONS §17, issue 37 item 5). With a request pool of
// one connection held by a request that waits on a row lock (held from another client) and more
// requests queued behind it, /health stays 200: the database part is `degraded` and names the wait,
// never `unhealthy`, because its probe runs on a connection of its own. Postgres really down is still
// 503, and the probe's connection comes back with it. PGlite (no pool) keeps reporting as before.
// The Postgres cases run in the suite's Postgres run (DATABASE_URL set), on a cluster of their own:
// stopping the shared one would break every other test file.
import t from 'tap'
import pg from 'pg'
import { POOL_WAIT_DEGRADED_MS } from '../src/http/database-health.js'
import { startApp } from './helpers/app.js'
import { ownPostgresUnavailable, startOwnPostgres } from './helpers/own-postgres.js'
import { signInPerson } from './helpers/people.js'
import { sleep } from './helpers/sse.js'

interface Part { status: string, latency: number, poolWait?: number, waiting?: number }
interface Report { status: string, services: Record<string, Part> }

const postgresSkip = process.env.DATABASE_URL === undefined ? 'the Postgres run only (DATABASE_URL set)' : ownPostgresUnavailable()

t.test('Postgres: a saturated request pool makes /health degraded with the wait, never unhealthy; Postgres down is 503', { skip: postgresSkip ?? false }, async (t) => {
  const cluster = await startOwnPostgres()
  t.teardown(cluster.destroy)
  const s = await startApp({ DATABASE_URL: cluster.url, DATABASE_POOL_SIZE: '1' })
  t.teardown(s.close)
  const health = async (): Promise<{ code: number, report: Report }> => {
    const answer = await s.app.inject({ method: 'GET', url: '/health' })
    return { code: answer.statusCode, report: answer.json() }
  }
  /** /health asked every 100 ms until `done` says so (or 10 s passed): the last answer. */
  const healthWhen = async (done: (answer: { code: number, report: Report }) => boolean): Promise<{ code: number, report: Report }> => {
    let answer = await health()
    for (let i = 0; i < 100 && !done(answer); i++) {
      await sleep(100)
      answer = await health()
    }
    return answer
  }
  const owner = await signInPerson(s, 'pool-health')
  const roomId = (await owner.rest('POST', '/api/rooms', { name: 'Locked', isPublic: false })).json().data.id as string
  const calm = await health()
  t.equal(calm.code, 200)
  t.same(calm.report.services.database, { status: 'healthy', latency: calm.report.services.database?.latency }, 'healthy, with nothing about the pool')

  // Another client holds the room's row; a rename waits on it holding the pool's only connection.
  const locker = new pg.Client({ connectionString: cluster.url })
  locker.on('error', () => {})
  await locker.connect()
  t.teardown(async () => { await locker.end().catch(() => {}) })
  await locker.query('begin')
  await locker.query('select id from rooms where id = $1 for update', [roomId])
  const rename = owner.rest('PATCH', `/api/rooms/${roomId}`, { name: 'renamed' })
  // Reads keep coming and queue for the pool (each gives up after 3 s with 503).
  const reads: Array<Promise<unknown>> = []
  const reading = setInterval(() => { reads.push(owner.rest('GET', `/api/rooms/${roomId}`)) }, 200)

  const seen: Array<{ code: number, report: Report }> = []
  let degraded: Part | undefined
  const started = Date.now()
  while (degraded === undefined && Date.now() - started < 10_000) {
    const answer = await health()
    seen.push(answer)
    if (answer.report.services.database?.status === 'degraded') degraded = answer.report.services.database
    await sleep(100)
  }
  clearInterval(reading)
  t.ok(degraded !== undefined, 'the database part turned degraded')
  t.ok((degraded?.poolWait ?? 0) >= POOL_WAIT_DEGRADED_MS, `naming the wait: the oldest request had waited ${degraded?.poolWait} ms for a connection`)
  t.ok((degraded?.waiting ?? 0) >= 1, `and how many waited (${degraded?.waiting})`)
  t.same(seen.filter((answer) => answer.code !== 200 || answer.report.services.database?.status === 'unhealthy').map((answer) => answer.report), [],
    'every /health meanwhile was 200, none calling the database unhealthy')
  t.equal(seen.at(-1)?.report.status, 'degraded', 'the report says degraded')

  await locker.query('rollback')
  await locker.end()
  t.equal((await rename).statusCode, 200, 'the rename went through once the row was free')
  await Promise.allSettled(reads)
  const back = await healthWhen((answer) => answer.report.services.database?.status === 'healthy')
  t.equal(back.report.services.database?.status, 'healthy', 'healthy again once the pool drained')

  await cluster.stop()
  const down = await healthWhen((answer) => answer.code === 503)
  t.equal(down.code, 503, 'Postgres down: 503')
  t.equal(down.report.services.database?.status, 'unhealthy')
  await cluster.start()
  const up = await healthWhen((answer) => answer.code === 200)
  t.equal(up.code, 200, 'and 200 once it is back: the probe opened its connection again')
  t.equal(up.report.services.database?.status, 'healthy')
})

t.test('PGlite (no pool): the database part is probed as before', async (t) => {
  const s = await startApp({ DATABASE_URL: undefined })
  t.teardown(s.close)
  const answer = await s.app.inject({ method: 'GET', url: '/health' })
  t.equal(answer.statusCode, 200)
  const database = (answer.json() as Report).services.database
  t.same(database, { status: 'healthy', latency: database?.latency })
})
