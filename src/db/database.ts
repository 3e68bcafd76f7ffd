// Opens the database the configuration names: Postgres through `pg` when DATABASE_URL is set,
// otherwise embedded PGlite in DATA_DIR. Both run the same migrations and queries.
// DATABASE_URL may lead through a transaction pooler (PgBouncer, pool_mode = transaction): nothing
// here relies on a session (no session SET, no named prepared statement, advisory locks only
// transaction-scoped). Migrations run on the direct connection (DATABASE_DIRECT_URL).
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { Kysely, sql, type KyselyConfig } from 'kysely'
import type pg from 'pg'
import { PGliteDialect } from './pglite-dialect.js'
import { migrateOrVerify, migrateToLatest } from './migrate.js'
import { createDatabaseProbe } from './database-probe.js'
import { OutageAwarePostgresDialect } from './outage-dialect.js'
import { PoolWaits, type PoolWait } from './pool-waits.js'
import { createPostgresPool } from './postgres-pool.js'
import type { Database } from './schema.js'

export type Db = Kysely<Database>

export interface DatabaseHandle {
  readonly db: Db
  readonly kind: 'postgres' | 'pglite'
  /** The PGlite instance on the embedded default (for LISTEN/NOTIFY); undefined on Postgres. */
  readonly pglite: PGlite | undefined
  /** The pg pool on Postgres; undefined on PGlite. */
  readonly pool: pg.Pool | undefined
  /** Resolves when the database answers: on Postgres over a connection of its own (database-probe.ts),
   *  never one of the request pool, so a busy pool does not look like a database that is down. */
  ping (): Promise<void>
  /** How long requests wait for a pooled connection (Postgres); undefined on PGlite, which has no pool. */
  poolWait (): PoolWait | undefined
  close (): Promise<void>
}

export interface DatabaseOptions {
  databaseUrl: string | undefined
  /** The same database without the pooler (migrations); default: databaseUrl. */
  databaseDirectUrl?: string | undefined
  dataDir: string
  databasePoolSize?: number
  databaseIdleInTransactionTimeoutMs?: number
  /** Called with each statement this handle runs (tests count the database's work through it). */
  onQuery?: (statement: string) => void
  /** Called for each statement that failed (the metrics count them). */
  onQueryError?: () => void
}

/** Kysely's query log, only when someone listens (it times every query). */
function queryLog (options: DatabaseOptions): Pick<KyselyConfig, 'log'> {
  const { onQuery, onQueryError } = options
  if (onQuery === undefined && onQueryError === undefined) return {}
  return {
    log: (event) => {
      if (event.level === 'query') onQuery?.(event.query.sql)
      else onQueryError?.()
    }
  }
}

/** Migrations on a connection of their own that bypasses the pooler, closed when they are done. */
async function migrateDirectly (url: string): Promise<void> {
  const db = new Kysely<Database>({ dialect: new OutageAwarePostgresDialect({ pool: createPostgresPool({ connectionString: url, max: 1, applicationName: 'canvas-migrate' }) }) })
  try {
    await migrateOrVerify(db)
  } finally {
    await db.destroy()
  }
}

export async function openDatabase (options: DatabaseOptions): Promise<DatabaseHandle> {
  if (options.databaseUrl !== undefined) {
    const pool = createPostgresPool({ connectionString: options.databaseUrl, max: options.databasePoolSize ?? 10 })
    const waits = new PoolWaits()
    const db = new Kysely<Database>({ dialect: new OutageAwarePostgresDialect({ pool, idleInTransactionTimeoutMs: options.databaseIdleInTransactionTimeoutMs ?? 0 }, waits), ...queryLog(options) })
    // As the tables' owner: migrate. As a service role without ownership: only check none is pending.
    // Either on the direct connection, bypassing a transaction pooler.
    const direct = options.databaseDirectUrl ?? options.databaseUrl
    if (direct === options.databaseUrl) await migrateOrVerify(db)
    else await migrateDirectly(direct)
    // /health measures Postgres itself, not a pooler's queue in front of it.
    const probe = createDatabaseProbe(direct)
    return {
      db,
      kind: 'postgres',
      pglite: undefined,
      pool,
      ping: async () => { await probe.ping() },
      poolWait: () => waits.current(),
      close: async () => {
        await probe.close()
        await db.destroy()
      }
    }
  }
  const dir = join(options.dataDir, 'pglite')
  mkdirSync(dir, { recursive: true })
  const pglite = await PGlite.create(dir)
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite), ...queryLog(options) })
  await migrateToLatest(db)
  return {
    db,
    kind: 'pglite',
    pglite,
    pool: undefined,
    ping: async () => { await sql`select 1`.execute(db) },
    poolWait: () => undefined,
    close: async () => {
      await db.destroy()
      await pglite.close()
    }
  }
}
