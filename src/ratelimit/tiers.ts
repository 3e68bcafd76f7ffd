// The rate-limit tiers (SPEC Limits, first tier table — it governs every other rate figure in SPEC).
// Every REST route and RPC method names one; a route without a tier uses `standard`.
import type { Config } from '../config.js'

export type Tier = 'exempt' | 'strict' | 'expensive' | 'upload' | 'canvas' | 'write' | 'read' | 'standard'

export interface TierLimit {
  /** Requests allowed per window; the one after them is rejected. */
  max: number
  windowMs: number
  /** How long a request of this tier waits for Redis's shared count before its instance's own count answers. */
  redisWaitMs: number
}

/** Fixed tiers count in 60-second windows (SPEC Limits rule 1). */
const MINUTE_MS = 60_000

const FIXED: Record<Exclude<Tier, 'exempt' | 'standard'>, number> = {
  strict: 10, // magic-link requests, account deletion
  expensive: 5, // CV parsing, AI classification
  upload: 20, // avatar and attachment uploads
  canvas: 300, // position updates, drag/drop, layout, cursors
  write: 100, // create, update, delete
  read: 300 // list and fetch
}

/**
 * How long each tier waits for the shared count in Redis. Past it the request is answered from this
 * instance's own count, which with N instances lets up to N times the limit through: cheap for
 * reads, not for what sends mail or costs CPU. The tiers guarding those wait longer, since their
 * requests take far longer than the wait anyway (a mail, a parse, an upload); the busy tiers wait a
 * few milliseconds so a slow Redis never holds the bulk of the traffic up. The Redis client's
 * command timeout (src/infra/redis.ts) stays above the longest wait.
 */
const REDIS_WAIT_MS: Record<Exclude<Tier, 'exempt'>, number> = {
  strict: 250,
  expensive: 100,
  upload: 100,
  write: 25,
  canvas: 10,
  read: 10,
  standard: 10
}

/** Limits of every counted tier; `exempt` has none. `standard` comes from RATE_LIMIT_MAX_REQUESTS / _WINDOW_MS. */
export type TierTable = Record<Exclude<Tier, 'exempt'>, TierLimit>

export function tierTable (config: Pick<Config, 'rateLimitMaxRequests' | 'rateLimitWindowMs'>): TierTable {
  return {
    strict: { max: FIXED.strict, windowMs: MINUTE_MS, redisWaitMs: REDIS_WAIT_MS.strict },
    expensive: { max: FIXED.expensive, windowMs: MINUTE_MS, redisWaitMs: REDIS_WAIT_MS.expensive },
    upload: { max: FIXED.upload, windowMs: MINUTE_MS, redisWaitMs: REDIS_WAIT_MS.upload },
    canvas: { max: FIXED.canvas, windowMs: MINUTE_MS, redisWaitMs: REDIS_WAIT_MS.canvas },
    write: { max: FIXED.write, windowMs: MINUTE_MS, redisWaitMs: REDIS_WAIT_MS.write },
    read: { max: FIXED.read, windowMs: MINUTE_MS, redisWaitMs: REDIS_WAIT_MS.read },
    standard: { max: config.rateLimitMaxRequests, windowMs: config.rateLimitWindowMs, redisWaitMs: REDIS_WAIT_MS.standard }
  }
}
