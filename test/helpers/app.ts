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
import { migratedDataDir } from './database-template.js'
import { temporaryDir } from './temp-dirs.js'
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

/**
 * The environment of a test's app. Its DATA_DIR is new, with the embedded database already migrated
 * unless `migrated: false` (a configuration check, or an app handed a database of its own: no copy to
 * make), or given (a restart on the same data).
 */
export function testEnv (overrides: Record<string, string | undefined> = {}, { migrated = true } = {}): Record<string, string | undefined> {
  // A test that names its own database names its direct URL too (or has none).
  const ownDatabase = 'DATABASE_URL' in overrides
  const databaseUrl = ownDatabase ? overrides.DATABASE_URL : pooler?.url ?? process.env.DATABASE_URL
  return {
    NODE_ENV: 'test',
    DATA_DIR: 'DATA_DIR' in overrides ? overrides.DATA_DIR : migrated && databaseUrl === undefined ? migratedDataDir() : temporaryDir(),
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
  const config = loadConfig(testEnv(overrides, { migrated: options.database === undefined }))
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

interface OutboxIndex { read: Set<string>, byRecipient: Map<string, Array<{ file: string, mail: Omit<SentMail, 'token'> }>> }
/** What was read of each outbox folder: a message file, once whole, never changes, so each is read
 *  once (a file that sign-ins make hundreds of would otherwise be read hundreds of times). */
const outboxes = new Map<string, OutboxIndex>()

/** The messages the outbox holds for `to`, oldest first. A file another request is still writing
 *  (sign-ins in parallel) does not parse yet and is skipped: it is not the one the caller waited for. */
function mailsTo (config: Config, to: string): Array<Omit<SentMail, 'token'>> {
  const dir = join(config.dataDir, 'outbox')
  let index = outboxes.get(dir)
  if (index === undefined) outboxes.set(dir, index = { read: new Set(), byRecipient: new Map() })
  for (const file of readdirSync(dir)) {
    if (index.read.has(file)) continue
    let mail: Omit<SentMail, 'token'>
    try {
      mail = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Omit<SentMail, 'token'>
    } catch {
      continue
    }
    index.read.add(file)
    const mails = index.byRecipient.get(mail.to) ?? []
    mails.push({ file, mail })
    // File names start with the time of writing: their order is the order sent.
    mails.sort((a, b) => a.file < b.file ? -1 : a.file > b.file ? 1 : 0)
    index.byRecipient.set(mail.to, mails)
  }
  return (index.byRecipient.get(to.toLowerCase()) ?? []).map((m) => m.mail)
}

/** The newest message the outbox holds for `to`, with the `token=` value of its link. */
export function lastMailTo (config: Config, to: string): SentMail {
  const mail = mailsTo(config, to).at(-1)
  if (mail === undefined) throw new Error(`no mail to ${to}`)
  const token = /token=([A-Za-z0-9_-]+)/.exec(mail.text)?.[1]
  if (token === undefined) throw new Error(`mail to ${to} has no token`)
  return { ...mail, token }
}

export function mailCount (config: Config, to: string): number {
  try {
    return mailsTo(config, to).length
  } catch {
    return 0 // no outbox folder yet
  }
}
