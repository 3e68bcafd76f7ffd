/** Time source for every expiry decision, so tests can move time instead of waiting. */
export interface Clock {
  now (): Date
}

export const systemClock: Clock = { now: () => new Date() }

/**
 * Milliseconds on a clock that only moves forward, for ages and intervals (how old a cache entry
 * is): the wall clock can be set back or forward (NTP, a VM resumed), which would keep an entry
 * alive for as long as the step, or age everything at once.
 */
export const monotonicMs = (): number => performance.now()
