// How the limiter's counts were answered, kept in one place with a small API (the metrics of issue
// 31 read `snapshot()`). A count is answered
//   `shared`       by Redis, within its tier's wait;
//   `memory`       by this instance, with no Redis configured (by design: one instance);
//   `late`         by this instance, because Redis did not answer within the tier's wait (Redis still
//                  counts it when its reply comes);
//   `unavailable`  by this instance, while Redis fails.
// The last two loosen every limit up to N times with N instances, so they are not silent: the first
// one logs a warning at once, then one summary line at most every REPORT_EVERY_MS while they go on,
// and a line when they stopped; and health reports `cache: degraded` until none has happened for
// DEGRADED_FOR_MS (both periods: LimiterTiming). Ages are read from a monotonic clock (a wall-clock
// step must not end or extend it).
import type { Tier } from './tiers.js'

export type CountedTier = Exclude<Tier, 'exempt'>
export type CountSource = 'shared' | 'memory' | 'late' | 'unavailable'
type LocalSource = Extract<CountSource, 'late' | 'unavailable'>

export interface LimiterTiming {
  /** At most one warning line per this period while counts are answered by this instance alone. */
  reportEveryMs: number
  /** Health says `cache: degraded` until this long after the last count answered by this instance alone. */
  degradedForMs: number
}

export const DEFAULT_LIMITER_TIMING: LimiterTiming = { reportEveryMs: 10_000, degradedForMs: 10_000 }

export interface LimiterCounts {
  record (tier: CountedTier, source: CountSource): void
  /** Totals since the process started: tier → source → count (tiers and sources seen so far). */
  snapshot (): Partial<Record<CountedTier, Partial<Record<CountSource, number>>>>
  /** Whether a count was answered by this instance alone (late or unavailable) within `degradedForMs`. */
  degraded (): boolean
  close (): void
}

export interface CountsLog {
  warn (details: object, message: string): void
  info (details: object, message: string): void
}

export interface LimiterCountsOptions {
  log: CountsLog
  /** The longest each tier waits for Redis (named in the log lines). */
  waitsMs: Partial<Record<CountedTier, number>>
  /** Monotonic milliseconds (tests may pass their own). */
  now?: () => number
  timing?: LimiterTiming
}

const isLocal = (source: CountSource): source is LocalSource => source === 'late' || source === 'unavailable'

export function createLimiterCounts (options: LimiterCountsOptions): LimiterCounts {
  const now = options.now ?? (() => performance.now())
  const { reportEveryMs, degradedForMs } = options.timing ?? DEFAULT_LIMITER_TIMING
  const totals: Partial<Record<CountedTier, Partial<Record<CountSource, number>>>> = {}
  /** Local answers since the last log line, by source and tier. */
  let unreported: Record<LocalSource, Partial<Record<CountedTier, number>>> = { late: {}, unavailable: {} }
  let unreportedCount = 0
  let lastLocalAt = Number.NEGATIVE_INFINITY
  let reportTimer: NodeJS.Timeout | undefined

  function takeUnreported (): { late: Partial<Record<CountedTier, number>>, unavailable: Partial<Record<CountedTier, number>>, total: number } {
    const taken = { ...unreported, total: unreportedCount }
    unreported = { late: {}, unavailable: {} }
    unreportedCount = 0
    return taken
  }

  function report (): void {
    reportTimer = undefined
    if (unreportedCount === 0) {
      // Said as seen: with no requests at all meanwhile, Redis may still be down (its own line says when it is back).
      options.log.info({}, `rate limiter: no request answered from this instance's own count in the last ${reportEveryMs / 1000} s`)
      return
    }
    const counts = takeUnreported()
    options.log.warn({ ...counts, periodMs: reportEveryMs, waitsMs: options.waitsMs },
      `rate limiter: ${counts.total} requests answered from this instance's own count in the last ${reportEveryMs / 1000} s (Redis late or unavailable): their limits held per instance, not across instances`)
    schedule()
  }

  function schedule (): void {
    reportTimer = setTimeout(report, reportEveryMs)
    reportTimer.unref()
  }

  return {
    record (tier, source) {
      const bySource = totals[tier] ??= {}
      bySource[source] = (bySource[source] ?? 0) + 1
      if (!isLocal(source)) return
      lastLocalAt = now()
      unreported[source][tier] = (unreported[source][tier] ?? 0) + 1
      unreportedCount++
      if (reportTimer !== undefined) return
      // The first of a run is reported at once (a fall-back to memory logs its own line, with the
      // error); the rest in one summary per period.
      if (source === 'late') {
        options.log.warn({ tier, waitMs: options.waitsMs[tier], ...takeUnreported() },
          `rate limiter: Redis did not answer within the ${tier} tier's wait; answered from this instance's own count`)
      }
      schedule()
    },
    snapshot () {
      return Object.fromEntries(Object.entries(totals).map(([tier, bySource]) => [tier, { ...bySource }]))
    },
    degraded () {
      return now() - lastLocalAt < degradedForMs
    },
    close () {
      clearTimeout(reportTimer)
      reportTimer = undefined
    }
  }
}
