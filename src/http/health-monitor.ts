// The health report kept in memory (issue 31): a probe round (database, cache, storage, events) runs
// at most once a second, and requests answer the latest report instead of waiting for a round of
// their own, so a flood of /health (load balancers, load testers) costs no more than one round a
// second. A report older than MAX_AGE_MS (no one asked for a while) is not answered: the request waits
// for a fresh round. After a failure is seen — a part unhealthy in the latest report, or a request
// answered 503 since (failureSeen) — the next request probes at once and waits for that round, so a
// part that breaks or comes back is reported without delay; rounds never overlap.
import { healthReport, type HealthProbe, type HealthReport } from '../core/health.js'
import type { Clock } from '../infra/clock.js'

/** The fewest milliseconds between two rounds while the parts are healthy. */
export const REFRESH_EVERY_MS = 1_000
/** A report older than this is not answered: the request waits for a fresh round. */
export const MAX_AGE_MS = 2_000

export interface HealthMonitorOptions {
  probes: Record<string, HealthProbe>
  /** The report's timestamp. */
  clock: Clock
  /** Seconds since start, for the REST report; undefined leaves `uptime` out. */
  uptime?: () => number
  /** Milliseconds of a monotonic clock (tests pass one they move). */
  now?: () => number
  /** Called as each probe round starts (tests count rounds). */
  onRound?: () => void
}

export interface HealthMonitor {
  /** The latest report, probed afresh when it is too old or after a failure. */
  report (): Promise<HealthReport>
  /** A request met a failing dependency: the next report is probed at once. */
  failureSeen (): void
}

export function createHealthMonitor (options: HealthMonitorOptions): HealthMonitor {
  const { probes, clock, uptime, onRound } = options
  const now = options.now ?? (() => performance.now())
  let latest: { report: HealthReport, at: number, failing: boolean } | undefined
  let running: Promise<HealthReport> | undefined
  let failure = false

  function refresh (): Promise<HealthReport> {
    if (running !== undefined) return running
    failure = false
    onRound?.()
    const at = now()
    running = healthReport(probes, clock.now(), uptime?.()).then((report) => {
      const failing = Object.values(report.services).some((part) => part.status === 'unhealthy')
      latest = { report, at, failing }
      return report
    }).finally(() => { running = undefined })
    return running
  }

  return {
    async report () {
      const age = latest === undefined ? Infinity : now() - latest.at
      if (latest === undefined || latest.failing || failure || age >= MAX_AGE_MS) return await refresh()
      // healthReport never rejects (a part that fails is reported unhealthy).
      if (age >= REFRESH_EVERY_MS) void refresh()
      return latest.report
    },
    failureSeen () { failure = true }
  }
}
