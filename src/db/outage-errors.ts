// Which database errors mean "the database cannot be reached right now" (an outage, worth a retry)
// rather than "this query is wrong" (constraint violations, syntax errors: the core handles or
// masks those). Outages become the data layer's own DatabaseUnavailableError, which the core maps
// to its `unavailable` (503 / UNAVAILABLE with Retry-After: 1, src/core/errors.ts); everything else
// passes through untouched, so code matching SQLSTATEs such as 23503 still works.

/** Socket-level failures: nobody listening, connection cut, or no answer in time. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH'])

/** Server-side refusals and terminations outside class 08 (connection exception). */
const OUTAGE_SQLSTATES = new Set([
  '57P01', // admin_shutdown: pg_terminate_backend, a fast shutdown or restart
  '57P02', // crash_shutdown: another backend crashed, the server restarts
  '57P03', // cannot_connect_now: starting up, shutting down, in recovery
  '53300' // too_many_connections
])

/** What `pg` and `pg-pool` say when a connection died or never came, in their own words. */
const PG_MESSAGES = [
  /^Connection terminated/, // unexpectedly, or due to the pool's connection timeout
  /^timeout exceeded when trying to connect$/,
  /^Client has encountered a connection error and is not queryable$/
]

const MAX_CAUSE_DEPTH = 5

export function isDatabaseOutage (error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > MAX_CAUSE_DEPTH) return false
  const { code, message, cause } = error as { code?: unknown, message?: unknown, cause?: unknown }
  if (typeof code === 'string') {
    if (NETWORK_CODES.has(code) || OUTAGE_SQLSTATES.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return true
  }
  if (typeof message === 'string' && PG_MESSAGES.some((pattern) => pattern.test(message))) return true
  // pg-pool wraps a timed-out connect; Node wraps a failed dual-stack connect in an AggregateError.
  if (error instanceof AggregateError && error.errors.some((inner) => isDatabaseOutage(inner, depth + 1))) return true
  return isDatabaseOutage(cause, depth + 1)
}

export const DATABASE_UNAVAILABLE_MESSAGE = 'The database is unavailable; retry shortly.'

/** The error a query raises during an outage; the original stays on `cause` for whoever logs it. */
export class DatabaseUnavailableError extends Error {
  /** Seconds after which a retry may succeed (a restart or failover takes about that). */
  readonly retryAfter = 1

  constructor (cause: unknown) {
    super(DATABASE_UNAVAILABLE_MESSAGE, { cause })
    this.name = 'DatabaseUnavailableError'
  }
}

/** `error` as the caller should see it: an outage becomes DatabaseUnavailableError, anything else is unchanged. */
export function translateOutage (error: unknown): unknown {
  return isDatabaseOutage(error) ? new DatabaseUnavailableError(error) : error
}
