// The database connections of the live stream. LISTEN: in-process on PGlite, one dedicated
// connection on Postgres — on DATABASE_DIRECT_URL, since a transaction pooler cannot keep a LISTEN.
// Reads on the delivery path (loading logged events, resolving recipients, session checks): on
// Postgres a small pool of their own, so a write pool saturated by requests never holds deliveries
// back behind queued transactions; on PGlite the one embedded connection. Those reads need no
// session (each is one statement reading its own snapshot), so they go through DATABASE_URL, pooler
// or not. Streams catching up from the log (every client reconnecting at once after a restart) read
// on the same pool, but at most READ_POOL_SIZE - 1 of their reads run at once: one connection is
// always left for live delivery.
import { Kysely, sql } from 'kysely'
import pLimit from 'p-limit'
import type { Config } from '../config.js'
import type { Logger } from '../infra/logger.js'
import type { DatabaseHandle, Db } from '../db/database.js'
import { OutageAwarePostgresDialect } from '../db/outage-dialect.js'
import { createPostgresPool } from '../db/postgres-pool.js'
import type { Database } from '../db/schema.js'
import type { CatchUpReads } from './replay.js'
import { pgliteListener, postgresListener, type NotificationListener } from '../infra/notification-listener.js'

export const READ_POOL_SIZE = 3

export interface LiveConnections {
  readonly listener: NotificationListener
  readonly readDb: Db
  /** Runs a catch-up read (replay.ts) when fewer than its share of the read connections are busy with them. */
  readonly catchUpReads: CatchUpReads
  /** Closes the read pool (the listener is closed by its user). */
  close (): Promise<void>
}

export function liveConnectionsFor (database: DatabaseHandle, config: Config, log: Logger): LiveConnections {
  if (database.pglite !== undefined) {
    return {
      listener: pgliteListener(database.pglite, async (statement) => { await sql.raw(statement).execute(database.db) }),
      readDb: database.db,
      // The embedded database runs one statement at a time: live reads take turns with catch-ups.
      catchUpReads: limitedTo(1),
      close: async () => {}
    }
  }
  if (config.databaseUrl === undefined) throw new Error('a Postgres database needs DATABASE_URL for its live connections')
  const pool = createPostgresPool({ connectionString: config.databaseUrl, max: READ_POOL_SIZE, applicationName: 'canvas-live-reads' })
  const readDb = new Kysely<Database>({ dialect: new OutageAwarePostgresDialect({ pool, idleInTransactionTimeoutMs: config.databaseIdleInTransactionTimeoutMs }) })
  return {
    listener: postgresListener(config.databaseDirectUrl ?? config.databaseUrl, log),
    readDb,
    catchUpReads: limitedTo(READ_POOL_SIZE - 1),
    close: async () => { await readDb.destroy() }
  }
}

function limitedTo (concurrency: number): CatchUpReads {
  const limit = pLimit(concurrency)
  return async (read) => await limit(read)
}
