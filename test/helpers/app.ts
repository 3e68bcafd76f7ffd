// Builds the real app for a test: PGlite in a fresh DATA_DIR by default (a copy of a database
// migrated once, test/helpers/database-template.ts); Postgres and Redis when DATABASE_URL / REDIS_URL
// are set in the environment (CI runs the suite both ways).
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes, randomInt, randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { buildApp, type BuildOptions } from '../../src/app.js'
import { loadConfig, type Config } from '../../src/config.js'
import type { Clock } from '../../src/infra/clock.js'
import { migratedDataDir, temporaryDir } from './database-template.js'
import { startOwnPgBouncer } from './own-pgbouncer.js'

/**
 * TEST_PGBOUNCER=1 with DATABASE_URL: every app this process builds reaches that Postgres through a
 * PgBouncer of the process's own (transaction pooling, 4 server connections), with
 * DATABASE_DIRECT_URL at Postgres itself for what needs a session (CI runs a part of the suite so).
 */
const pooler = process.env.TEST_PGBOUNCER === '1' && process.env.DATABASE_URL !== undefined
  ? await startOwnPgBouncer(process.env.DATABASE_URL, { poolSize: 4 })
  : undefined

export interface TestApp {
  app: FastifyInstance
  config: Config
  /** Origin of the listening server, e.g. http://127.0.0.1:41234 */
  url: string
  close (): Promise<void>
}

export function testEnv (overrides: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  // A test that names its own database names its direct URL too (or has none).
  const ownDatabase = 'DATABASE_URL' in overrides
  const databaseUrl = ownDatabase ? overrides.DATABASE_URL : pooler?.url ?? process.env.DATABASE_URL
  return {
    NODE_ENV: 'test',
    // A DATA_DIR given is used as it is (a restart on the same data); a new one starts migrated.
    DATA_DIR: 'DATA_DIR' in overrides ? overrides.DATA_DIR : databaseUrl === undefined ? migratedDataDir() : temporaryDir(),
    DATABASE_URL: pooler?.url ?? process.env.DATABASE_URL,
    DATABASE_DIRECT_URL: ownDatabase || pooler === undefined ? undefined : process.env.DATABASE_URL,
    REDIS_URL: process.env.REDIS_URL,
    JWT_SECRET: 'test-secret-test-secret-test-secret-0123456789',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    APP_URL: 'http://app.test',
    // Rate limits: every app counts under its own Redis key prefix, so test files running in parallel
    // on one Redis never share counters (two-instance tests pass the same prefix), and the sign-in
    // helpers send each sign-in from its own client address, trusted from the loopback peer.
    RATE_LIMIT_KEY_PREFIX: `test-${randomUUID()}:`,
    TRUST_PROXY: '127.0.0.1',
    ...overrides
  }
}

export async function startApp (overrides: Record<string, string | undefined> = {}, options: BuildOptions = {}): Promise<TestApp> {
  const config = loadConfig(testEnv(overrides))
  const app = await buildApp(config, options)
  const address = await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, config, url: address, close: async () => { await app.close() } }
}

/** A clock the test moves by hand. */
export function movableClock (start = Date.now()): Clock & { advance (ms: number): void } {
  let now = start
  return { now: () => new Date(now), advance: (ms) => { now += ms } }
}

/** A random private client address (10.x.y.z), so each sign-in counts apart; sent as X-Forwarded-For. */
export function uniqueClientIp (): string {
  const bytes = randomBytes(2)
  return `10.${bytes[0]!}.${bytes[1]!}.${1 + randomInt(254)}`
}

export function uniqueEmail (label = 'user'): string {
  return `${label}-${randomUUID().slice(0, 12)}@example.test`
}

export interface SentMail { to: string, subject: string, text: string, token: string }

/** Every message in the outbox, oldest first. A file another request is still writing (sign-ins
 *  in parallel) does not parse yet and is skipped: it is not the one the caller waited for. */
function outbox (config: Config): Array<Omit<SentMail, 'token'>> {
  const dir = join(config.dataDir, 'outbox')
  return readdirSync(dir).sort().flatMap((f) => {
    try {
      return [JSON.parse(readFileSync(join(dir, f), 'utf8')) as Omit<SentMail, 'token'>]
    } catch {
      return []
    }
  })
}

/** The newest message the outbox holds for `to`, with the `token=` value of its link. */
export function lastMailTo (config: Config, to: string): SentMail {
  const mails = outbox(config)
  const mail = mails.filter((m) => m.to === to.toLowerCase()).at(-1)
  if (mail === undefined) throw new Error(`no mail to ${to}`)
  const token = /token=([A-Za-z0-9_-]+)/.exec(mail.text)?.[1]
  if (token === undefined) throw new Error(`mail to ${to} has no token`)
  return { ...mail, token }
}

export function mailCount (config: Config, to: string): number {
  try {
    return outbox(config).filter((m) => m.to === to.toLowerCase()).length
  } catch {
    return 0 // no outbox folder yet
  }
}
