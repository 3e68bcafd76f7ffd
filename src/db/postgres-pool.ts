// A pg pool that survives its server: Postgres restarting, or terminating our backends, must never
// end the process, and requests must not hang while it is away.
import pg from 'pg'

/**
 * How long taking a connection may take: opening a new one, or waiting for a busy pool to free one.
 * Without a bound, requests queue for as long as a hung or unreachable server takes to time out at
 * the TCP level (minutes); with it they fail with an outage error (503) and the client retries. A
 * healthy server connects in milliseconds, so this only ever fires when something is wrong.
 */
export const CONNECT_TIMEOUT_MS = 3_000

/** How the service's sessions name themselves in `pg_stat_activity` (and in the stall warning). */
export const APPLICATION_NAME = 'canvas-api'

export interface PostgresPoolOptions {
  connectionString: string
  max: number
  applicationName?: string
}

export function createPostgresPool (options: PostgresPoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    // The one startup parameter besides the user and database: PgBouncer (1.18) carries
    // application_name to whichever server connection serves us and refuses any other (the idle
    // transaction bound is therefore set per transaction, outage-dialect.ts).
    application_name: options.applicationName ?? APPLICATION_NAME
  })
  // An idle client's connection died: the pool has already dropped it and opens a new one on demand.
  pool.on('error', () => {})
  // A client that is checked out has no pool listener, and pg emits 'error' on the client itself
  // when its server goes away (57P01 on a restart or pg_terminate_backend): unheard, that ends the
  // process. The query in flight (if any) rejects with the same error, and the pool discards the
  // broken client when it is released, so hearing it is all that is needed.
  pool.on('connect', (client) => { client.on('error', () => {}) })
  return pool
}
