// The database connections of the live stream. LISTEN: in-process on PGlite, one dedicated
// connection on Postgres — on DATABASE_DIRECT_URL, since a transaction pooler cannot keep a LISTEN.
// Reads on the delivery path (loading logged events, resolving recipients, session checks): on
// Postgres a small pool of their own, so a write pool saturated by requests never holds deliveries
// back behind queued transactions; on PGlite the one embedded connection. Those reads need no
// session (each is one statement reading its own snapshot), so they go through DATABASE_URL, pooler
// or not.
import { Kysely, sql } from 'kysely'
import type { Config } from '../config.js'
import type { Logger } from '../infra/logger.js'
import type { DatabaseHandle, Db } from '../db/database.js'
import { OutageAwarePostgresDialect } from '../db/outage-dialect.js'
import { createPostgresPool } from '../db/postgres-pool.js'
import type { Database } from '../db/schema.js'
import { pgliteListener, postgresListener, type NotificationListener } from '../infra/notification-listener.js'

const READ_POOL_SIZE = 3

export interface LiveConnections {
  readonly listener: NotificationListener
  readonly readDb: Db
  /** Closes the read pool (the listener is closed by its user). */
  close (): Promise<void>
}

export function liveConnectionsFor (database: DatabaseHandle, config: Config, log: Logger): LiveConnections {
  if (database.pglite !== undefined) {
    return {
      listener: pgliteListener(database.pglite, async (statement) => { await sql.raw(statement).execute(database.db) }),
      readDb: database.db,
      close: async () => {}
    }
  }
  if (config.databaseUrl === undefined) throw new Error('a Postgres database needs DATABASE_URL for its live connections')
  const pool = createPostgresPool({ connectionString: config.databaseUrl, max: READ_POOL_SIZE, applicationName: 'canvas-live-reads' })
  const readDb = new Kysely<Database>({ dialect: new OutageAwarePostgresDialect({ pool, idleInTransactionTimeoutMs: config.databaseIdleInTransactionTimeoutMs }) })
  return {
    listener: postgresListener(config.databaseDirectUrl ?? config.databaseUrl, log),
    readDb,
    close: async () => { await readDb.destroy() }
  }
}
