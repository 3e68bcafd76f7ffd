// Background work every instance runs on a timer (the upload sweep, retention): a first run some
// time after start-up, then one per period, never two at once on this instance, and a `stop` that
// waits for a run under way (which checks `stopped` between its steps) before the database closes.
import type { Logger } from '../infra/logger.js'

export interface PeriodicJob { stop: () => Promise<void> }

export function startPeriodicJob (log: Logger, job: { firstMs: number, everyMs: number, failure: string }, work: (stopped: () => boolean) => Promise<unknown>): PeriodicJob {
  let stopped = false
  let running: Promise<unknown> | undefined
  const run = (): void => {
    if (running !== undefined || stopped) return
    running = work(() => stopped)
      .catch((error: unknown) => { log.warn({ err: error }, job.failure) })
      .finally(() => { running = undefined })
  }
  const first = setTimeout(run, job.firstMs)
  const every = setInterval(run, job.everyMs)
  first.unref()
  every.unref()
  return {
    stop: async () => {
      stopped = true
      clearTimeout(first)
      clearInterval(every)
      await running
    }
  }
}
