// The database as /health sees it (DECISIONS §17 "/health measures the database, not the pool"): a
// connection of the probe's own, outside the request pool, so a pool saturated by requests never
// makes a working Postgres look down. It stays open between probes (a probe costs one round trip) and
// is opened again by the next probe after any failure; connecting and the query each give up after
// PROBE_TIMEOUT_MS, inside the health report's own 2 s verdict (src/core/health.ts).
import pg from 'pg'

export const PROBE_TIMEOUT_MS = 1_500
/** How the probe's session names itself in `pg_stat_activity`. */
export const PROBE_APPLICATION_NAME = 'canvas-health'

export interface DatabaseProbe {
  /** Resolves when Postgres answers `select 1` on the probe's connection. */
  ping (): Promise<void>
  close (): Promise<void>
}

export function createDatabaseProbe (connectionString: string): DatabaseProbe {
  let client: pg.Client | undefined
  let connecting: Promise<pg.Client> | undefined
  let closed = false

  function drop (broken: pg.Client): void {
    if (client === broken) client = undefined
    broken.end().catch(() => {})
  }

  async function connection (): Promise<pg.Client> {
    if (client !== undefined) return client
    connecting ??= (async () => {
      const fresh = new pg.Client({ connectionString, application_name: PROBE_APPLICATION_NAME, connectionTimeoutMillis: PROBE_TIMEOUT_MS, query_timeout: PROBE_TIMEOUT_MS })
      // A connection the server ended (a restart, a termination) must never end the process.
      fresh.on('error', () => { drop(fresh) })
      try {
        await fresh.connect()
      } catch (error) {
        drop(fresh)
        throw error
      }
      if (closed) {
        drop(fresh)
        throw new Error('the database probe is closed')
      }
      client = fresh
      return fresh
    })().finally(() => { connecting = undefined })
    return await connecting
  }

  return {
    async ping () {
      const current = await connection()
      try {
        await current.query('select 1')
      } catch (error) {
        drop(current)
        throw error
      }
    },
    async close () {
      closed = true
      const current = client
      client = undefined
      await current?.end().catch(() => {})
    }
  }
}
