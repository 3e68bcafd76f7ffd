// Which database errors count as an outage (503 / UNAVAILABLE) and which pass through untouched,
// first as the errors pg and Node raise, then through the dialect against a port nobody listens on
// and, when DATABASE_URL is set, against a real server (a constraint violation must stay itself).
import t from 'tap'
import { createServer } from 'node:net'
import { Kysely, sql } from 'kysely'
import pg from 'pg'
import { AppError, asAppError } from '../src/core/errors.js'
import { OutageAwarePostgresDialect } from '../src/db/outage-dialect.js'
import { DATABASE_UNAVAILABLE_MESSAGE, DatabaseUnavailableError, isDatabaseOutage, translateOutage } from '../src/db/outage-errors.js'
import { createPostgresPool } from '../src/db/postgres-pool.js'

const withCode = (code: string, message = 'x'): Error => Object.assign(new Error(message), { code })

t.test('outages: refused, reset, timed out, terminated, shutting down, too many connections', async (t) => {
  for (const code of ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT']) t.ok(isDatabaseOutage(withCode(code)), code)
  for (const code of ['08000', '08003', '08006', '08001', '08004', '08P01', '57P01', '57P02', '57P03', '53300']) t.ok(isDatabaseOutage(withCode(code)), `SQLSTATE ${code}`)
  for (const message of [
    'Connection terminated unexpectedly',
    'Connection terminated',
    'Connection terminated due to connection timeout',
    'timeout exceeded when trying to connect',
    'Client has encountered a connection error and is not queryable'
  ]) t.ok(isDatabaseOutage(new Error(message)), message)
  t.ok(isDatabaseOutage(new Error('wrapped', { cause: withCode('ECONNREFUSED') })), 'through `cause`')
  t.ok(isDatabaseOutage(new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')], 'dual stack')), 'inside an AggregateError')
})

t.test('everything else passes through unchanged', async (t) => {
  for (const code of ['23503', '23505', '42601', '42P01', '22P02', '40001', '40P01', '3D000', '28000', '57014', 'ENOTFOUND']) {
    const error = withCode(code)
    t.notOk(isDatabaseOutage(error), code)
    t.equal(translateOutage(error), error, `${code} is returned as it was`)
  }
  for (const value of [undefined, null, 'ECONNREFUSED', 42, new Error('syntax error at or near "selec"'), new AppError('not_found', 'Room not found')]) {
    t.notOk(isDatabaseOutage(value), String(value))
  }
  const deep: Error = new Error('top')
  let at = deep
  for (let i = 0; i < 20; i++) { const next = new Error(`level ${i}`); at.cause = next; at = next }
  at.cause = withCode('ECONNREFUSED')
  t.notOk(isDatabaseOutage(deep), 'a cause chain is followed only a few levels')
})

t.test('the translation: the data layer\'s outage error, which the core maps to `unavailable`, retry after 1 s, the original kept as its cause', async (t) => {
  const original = withCode('57P01', 'terminating connection due to administrator command')
  const translated = translateOutage(original)
  t.ok(translated instanceof DatabaseUnavailableError)
  t.notOk(translated instanceof AppError, 'the data layer knows nothing of the core\'s errors')
  t.equal((translated as Error).cause, original)
  const mapped = asAppError(translated)
  t.ok(mapped instanceof AppError)
  t.match(mapped, { kind: 'unavailable', message: DATABASE_UNAVAILABLE_MESSAGE, retryAfter: 1, violations: [] })
  t.equal((mapped as Error).cause, original)
  t.equal(asAppError(original), original, 'any other error is left as it is')
})

async function closedPort (): Promise<number> {
  return await new Promise((resolve) => {
    const server = createServer()
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => { resolve(typeof address === 'object' && address !== null ? address.port : 0) })
    })
  })
}

t.test('through the dialect: a server that refuses connections is `unavailable`, at once', async (t) => {
  const pool = createPostgresPool({ connectionString: `postgres://postgres@127.0.0.1:${await closedPort()}/none`, max: 2 })
  const db = new Kysely<unknown>({ dialect: new OutageAwarePostgresDialect({ pool }) })
  t.teardown(async () => { await db.destroy() })
  const started = performance.now()
  const error = await sql`select 1`.execute(db).then(() => undefined, (e: unknown) => e)
  t.ok(error instanceof DatabaseUnavailableError)
  t.match(asAppError(error), { kind: 'unavailable', retryAfter: 1 })
  t.ok(isDatabaseOutage((error as Error).cause), 'the refusal is its cause')
  const transaction = await db.transaction().execute(async (trx) => await sql`select 1`.execute(trx)).then(() => undefined, (e: unknown) => e)
  t.ok(transaction instanceof DatabaseUnavailableError, 'a transaction too')
  t.ok(performance.now() - started < 1_000, 'without waiting for the connect timeout')
})

t.test('through the dialect on a real server: query errors stay themselves', { skip: process.env.DATABASE_URL === undefined ? 'DATABASE_URL is not set' : false }, async (t) => {
  const pool = createPostgresPool({ connectionString: process.env.DATABASE_URL ?? '', max: 2 })
  const db = new Kysely<unknown>({ dialect: new OutageAwarePostgresDialect({ pool }) })
  t.teardown(async () => { await db.destroy() })
  t.same((await sql<{ one: number }>`select 1 as one`.execute(db)).rows, [{ one: 1 }])
  const syntax = await sql`selec 1`.execute(db).then(() => undefined, (e: unknown) => e)
  t.ok(syntax instanceof pg.DatabaseError, 'a syntax error is the DatabaseError pg raised')
  t.match(syntax, { code: '42601' })
  const violation = await db.transaction().execute(async (trx) => {
    await sql`create temporary table parent (id int primary key)`.execute(trx)
    await sql`create temporary table child (parent int references parent (id))`.execute(trx)
    await sql`insert into child values (1)`.execute(trx)
  }).then(() => undefined, (e: unknown) => e)
  t.match(violation, { code: '23503' }, 'a foreign-key violation keeps its SQLSTATE (the core matches on it)')
})
