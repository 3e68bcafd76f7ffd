// Background work an instance runs now and then (the upload sweep, finishing stopped account
// deletions): once after `firstMs`, then every `everyMs`, never two runs at once; `stop` ends it and
// waits for a run under way (on close, before the database closes). A run that fails is logged (at most
// once per 10 s) and tried again at the next tick.
import type { Logger } from '../infra/logger.js'
import { logThrottled } from '../infra/throttled-log.js'

export interface PeriodicJob { stop: () => Promise<void> }

export function startPeriodicJob (options: { firstMs: number, everyMs: number, log: Logger, failure: string }, run: (stopped: () => boolean) => Promise<unknown>): PeriodicJob {
  let stopped = false
  let running: Promise<unknown> | undefined
  const tick = (): void => {
    if (running !== undefined || stopped) return
    running = run(() => stopped)
      .catch((error: unknown) => { logThrottled(options.log, 'warn', options.failure, { err: error }) })
      .finally(() => { running = undefined })
  }
  const first = setTimeout(tick, options.firstMs)
  const every = setInterval(tick, options.everyMs)
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
