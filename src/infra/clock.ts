/** Time source for every expiry decision, so tests can move time instead of waiting. */
export interface Clock {
  now (): Date
}

export const systemClock: Clock = { now: () => new Date() }
