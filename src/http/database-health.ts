// The database's part of /health (DECISIONS §17 "/health measures the database, not the pool"):
// unhealthy only when Postgres itself does not answer its probe, which runs on a connection of its own
// (src/db/database-probe.ts); `degraded`, naming the wait, while requests queue for the request pool's
// connections — the instance is busy, not broken, and a load balancer must not pull it for that.
import type { HealthProbe } from '../core/health.js'
import type { DatabaseHandle } from '../db/database.js'

/** A request waiting this long for a pooled connection makes the part degraded. */
export const POOL_WAIT_DEGRADED_MS = 500

export function databaseHealth (database: Pick<DatabaseHandle, 'ping' | 'poolWait'>): HealthProbe {
  const saturated = (): boolean => (database.poolWait()?.longestMs ?? 0) >= POOL_WAIT_DEGRADED_MS
  return {
    essential: true,
    async check () {
      await database.ping()
      const wait = database.poolWait()
      if (wait === undefined || wait.longestMs < POOL_WAIT_DEGRADED_MS) return 'healthy'
      return { status: 'degraded', poolWait: wait.longestMs, waiting: wait.waiting }
    },
    // A kept report that calls the database healthy is probed again at once when the pool saturates.
    alarm: saturated
  }
}
