// A stall of delivery made visible. Events are delivered once every older transaction has ended
// (event-log.repository.ts), so one long transaction anywhere on the Postgres cluster (a migration,
// a batch job, a psql session left open) holds every newer event back, on every instance. The bus
// tells this watch, after each read of the log, which event waits first; when the same one has
// waited longer than STALL_AFTER_MS, the watch logs a warning naming the session that holds it back
// (at most once per WARN_EVERY_MS), and the health report says `events: delayed` with the lag.
import type { Delayed } from '../core/health.js'
import type { Db } from '../db/database.js'
import { monotonicMs } from '../infra/clock.js'
import type { Logger } from '../infra/logger.js'
import { findBlocker, type Blocker } from './event-log.repository.js'
import { comparePositions, formatPosition, type LogPosition } from './log-position.js'

/** Held back longer than this, delivery counts as delayed (warning, health). */
export const STALL_AFTER_MS = 2_000
/** At most one warning this often while a stall lasts. */
export const WARN_EVERY_MS = 10_000

export interface StallWatch {
  /** After a read of the log: the first event still held back (undefined: none), and how far delivery got. */
  observe (waiting: LogPosition | undefined, delivered: LogPosition): void
  /** How long the first held-back event has waited, in ms (0 when none waits). */
  lagMs (): number
}

export function watchStalls (options: { readDb: Db, log: Logger }): StallWatch {
  const { readDb, log } = options
  let stall: { first: LogPosition, since: number } | undefined
  let lastWarning: number | undefined
  let lookingUp = false

  function warn (first: LogPosition, lagMs: number): void {
    if (lookingUp) return
    lookingUp = true
    findBlocker(readDb).then((blocker) => {
      log.warn({ lagMs, waitingEventId: formatPosition(first), blocker: blocker ?? null }, blockerMessage(blocker))
    }, (error: unknown) => {
      log.warn({ err: error, lagMs, waitingEventId: formatPosition(first) }, 'live events: delivery is held back by an open transaction (which one could not be read)')
    }).finally(() => { lookingUp = false })
  }

  return {
    observe (waiting, delivered) {
      if (waiting === undefined) {
        stall = undefined
        return
      }
      const now = monotonicMs()
      // The same stall lasts while the event that waited first is still undelivered.
      if (stall === undefined || comparePositions(delivered, stall.first) >= 0) stall = { first: waiting, since: now }
      const lag = now - stall.since
      if (lag > STALL_AFTER_MS && (lastWarning === undefined || now - lastWarning >= WARN_EVERY_MS)) {
        lastWarning = now
        warn(stall.first, Math.round(lag))
      }
    },
    lagMs: () => stall === undefined ? 0 : Math.round(monotonicMs() - stall.since)
  }
}

/** The warning's words for what holds delivery back. A role without pg_monitor (or
 *  pg_read_all_stats) sees other roles' sessions in pg_stat_activity without their details: the
 *  warning then says so, rather than printing the unknown as `null`. */
export function blockerMessage (blocker: Blocker | undefined): string {
  if (blocker === undefined) return 'live events: delivery is held back by an open transaction (a prepared transaction?); see pg_stat_activity and pg_prepared_xacts'
  const who = `pid ${blocker.pid} (${blocker.applicationName === '' ? 'no application_name' : blocker.applicationName})`
  if (blocker.transactionMs === null) {
    return `live events: delivery is held back by an open transaction: ${who}, a session of another role whose details this role may not see (grant it pg_monitor to see how long it has been open and what it runs: docs/operations.md)`
  }
  return `live events: delivery is held back by an open transaction: ${who}, open ${blocker.transactionMs} ms`
}

/** The health report's `events` part: delayed, with the lag, once delivery is held back past STALL_AFTER_MS. */
export function eventsHealth (lagMs: number): 'healthy' | Delayed {
  return lagMs > STALL_AFTER_MS ? { status: 'delayed', lag: lagMs } : 'healthy'
}
