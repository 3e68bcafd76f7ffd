// The rate-limit tiers (SPEC Limits, first tier table — it governs every other rate figure in SPEC).
// Every REST route and RPC method names one; a route without a tier uses `standard`.
import type { Config } from '../config.js'

export type Tier = 'exempt' | 'strict' | 'expensive' | 'upload' | 'canvas' | 'write' | 'read' | 'standard'

export interface TierLimit {
  /** Requests allowed per window; the one after them is rejected. */
  max: number
  windowMs: number
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

/** Limits of every counted tier; `exempt` has none. `standard` comes from RATE_LIMIT_MAX_REQUESTS / _WINDOW_MS. */
export type TierTable = Record<Exclude<Tier, 'exempt'>, TierLimit>

export function tierTable (config: Pick<Config, 'rateLimitMaxRequests' | 'rateLimitWindowMs'>): TierTable {
  return {
    strict: { max: FIXED.strict, windowMs: MINUTE_MS },
    expensive: { max: FIXED.expensive, windowMs: MINUTE_MS },
    upload: { max: FIXED.upload, windowMs: MINUTE_MS },
    canvas: { max: FIXED.canvas, windowMs: MINUTE_MS },
    write: { max: FIXED.write, windowMs: MINUTE_MS },
    read: { max: FIXED.read, windowMs: MINUTE_MS },
    standard: { max: config.rateLimitMaxRequests, windowMs: config.rateLimitWindowMs }
  }
}
