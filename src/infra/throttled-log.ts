// A failing dependency produces one line per failing part per 10 s (DECISIONS §17), never one per
// session, per request or per retry: a Postgres restart must not bury the log under a line for every
// cached session or every request that met it. A part is its message on its logger (the session
// cache's renewals, the limiter's fallback, the notification listener, the storage…): its first
// failure is written at once, later ones within the window are counted, and the next line written
// carries `repeated`: how many were left out since the one before.
import type { Logger } from './logger.js'

/** At most one line per part this often. */
export const LOG_EVERY_MS = 10_000

interface Part { lastAt: number, leftOut: number }

/** Per logger (the app's, or a test's), per message. */
const parts = new WeakMap<Logger, Map<string, Part>>()

export interface ThrottleOptions {
  /** The window (LOG_EVERY_MS; tests shorten it). */
  everyMs?: number
  /** Now, on a monotonic clock in ms (tests move it). */
  now?: number
}

/** Writes `message` at `level` unless this logger wrote it less than a window ago (then counts it).
 *  Pass the app's logger, not a request's child: the state is per logger. */
export function logThrottled (log: Logger, level: 'warn' | 'error', message: string, fields: Record<string, unknown> = {}, options: ThrottleOptions = {}): void {
  const now = options.now ?? performance.now()
  let byMessage = parts.get(log)
  if (byMessage === undefined) {
    byMessage = new Map()
    parts.set(log, byMessage)
  }
  const part = byMessage.get(message)
  if (part !== undefined && now - part.lastAt < (options.everyMs ?? LOG_EVERY_MS)) {
    part.leftOut++
    return
  }
  log[level](part === undefined || part.leftOut === 0 ? fields : { ...fields, repeated: part.leftOut }, message)
  byMessage.set(message, { lastAt: now, leftOut: 0 })
}
