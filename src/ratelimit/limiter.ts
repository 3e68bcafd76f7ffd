// The one rate limiter of both gateways (SPEC Limits rules 1–7). The REST hook and the RPC
// interceptor both call `hit(request, tier, userId)` with the Fastify request and map the decision
// to their own reply; counting, keys and client addresses live only here.
//
// The decision is @fastify/rate-limit's: its public `fastify.createRateLimit(options)` gives one
// check function, called here by the gate (src/http/admission.ts) at its place in the decision order
// (after the credential is resolved, before access is enforced), with
//   - `keyGenerator`: the tier and the caller (user id, else the client address of src/http/client-ip.ts);
//   - `max` / `timeWindow` as functions: the tier's limits (tiers.ts);
//   - a custom `store` (TierStore below): the product's fixed windows in counter-store.ts, Redis shared
//     by every instance with each instance's own memory count answering while Redis is slow or failing
//     (SPEC Limits rule 4), which the package's own Redis store cannot do (it fails or skips the count).
// The plugin's route hook is not used (`global: false`): the gate writes both header families itself
// (DECISIONS §8), with the window's end in Unix seconds. What the package cannot do is in README.md.
import fastifyRateLimit from '@fastify/rate-limit'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Redis } from 'ioredis'
import type { Config } from '../config.js'
import { AppError } from '../core/errors.js'
import type { Clock } from '../infra/clock.js'
import { CounterStore } from './counter-store.js'
import { createLimiterCounts, type LimiterCounts, type LimiterTiming } from './limiter-counts.js'
import { tierTable, type Tier, type TierLimit, type TierTable } from './tiers.js'
import { logThrottled } from '../infra/throttled-log.js'

type CountedTier = Exclude<Tier, 'exempt'>

declare module 'fastify' {
  interface FastifyRequest {
    /** The tier and caller the limiter is counting this request for (read by its key and limits). */
    rateLimitCount: { tier: CountedTier, limit: TierLimit, userId: string | null } | null
  }
}

export interface LimitDecision {
  allowed: boolean
  limit: number
  remaining: number
  /** Unix seconds at which the window ends. */
  reset: number
  /** Whole seconds until the window ends, at least 1. */
  retryAfter: number
}

export interface Limiter {
  /** Counts one request in its tier: null for `exempt`, else whether it may run and the header values. */
  hit (request: FastifyRequest, tier: Tier, userId: string | null): Promise<LimitDecision | null>
  /** The cache part of the health report: degraded while counts are answered by this instance alone. */
  health (): Promise<'healthy' | 'degraded'>
  /** How counts were answered, by tier (limiter-counts.ts). */
  readonly counts: Pick<LimiterCounts, 'snapshot'>
}

export interface LimiterOptions {
  config: Config
  redis: Redis | undefined
  clock: Clock
  /** Replaces tier maxima (the benchmark keeps its one user under every limit). Never from the environment. */
  maxOverride?: Partial<Record<Exclude<Tier, 'exempt'>, number>>
  /** How often local answers are summarised in the log, and how long health stays degraded after one
   *  (limiter-counts.ts; tests shorten them). Never from the environment. */
  timing?: LimiterTiming
  /** Told of every decision (the metrics count them by tier). */
  onDecision?: (tier: CountedTier, allowed: boolean) => void
  /** Told of each count answered by this instance alone (Redis late or failing): the health report
   *  (src/http/health-monitor.ts) probes afresh instead of answering its last report. */
  onLocalAnswer?: () => void
}

/** Redis key of a counter: `<RATE_LIMIT_KEY_PREFIX><tier>:user:<user id>` or `…<tier>:ip:<address or /64>`. */
function counterKey (tier: Tier, userId: string | null, request: FastifyRequest): string {
  return userId !== null ? `${tier}:user:${userId}` : `${tier}:ip:${request.clientIp}`
}

export function rateLimitedError (decision: LimitDecision): AppError {
  return new AppError('rate_limited', `Too many requests, retry in ${decision.retryAfter} seconds.`, [], decision.retryAfter)
}

/** Header values for every response of a limited route (DECISIONS §8): both families, same values. */
export function rateLimitHeaders (decision: LimitDecision): Array<[string, string]> {
  const limit = String(decision.limit)
  const remaining = String(decision.remaining)
  const reset = String(decision.reset)
  return [
    ['ratelimit-limit', limit], ['ratelimit-remaining', remaining], ['ratelimit-reset', reset],
    ['x-ratelimit-limit', limit], ['x-ratelimit-remaining', remaining], ['x-ratelimit-reset', reset]
  ]
}

/** A counter key's tier: the key starts with it (counterKey). */
function tierOfKey (key: string): CountedTier {
  return key.slice(0, key.indexOf(':')) as CountedTier
}

export async function createLimiter (app: FastifyInstance, options: LimiterOptions): Promise<Limiter> {
  const { config, clock } = options
  const now = (): number => clock.now().getTime()
  const store = new CounterStore({
    redis: options.redis,
    keyPrefix: config.rateLimitKeyPrefix,
    now,
    events: {
      fallback: (error) => { logThrottled(app.log, 'warn', 'rate limiter: Redis unavailable, counting per instance in memory', { err: error }) },
      resumed: () => { app.log.info('rate limiter: Redis answers again, shared counting resumed') }
    }
  })
  const table = tierTable(config)
  const counts = createLimiterCounts({
    log: app.log,
    waitsMs: Object.fromEntries(Object.entries(table).map(([tier, limit]) => [tier, limit.redisWaitMs])),
    timing: options.timing
  })
  app.addHook('onClose', async () => {
    store.close()
    counts.close()
  })

  const limits = new Map<CountedTier, TierLimit>()
  for (const [tier, limit] of Object.entries(table) as Array<[CountedTier, TierTable[keyof TierTable]]>) {
    limits.set(tier, { ...limit, max: options.maxOverride?.[tier] ?? limit.max })
  }

  /**
   * The package's store interface over counter-store.ts: `incr` counts in the key's tier window,
   * waits for Redis at most the tier's wait and never fails (a late or failing Redis is answered from
   * this instance's memory), and records how each count was answered (limiter-counts.ts).
   */
  class TierStore implements fastifyRateLimit.FastifyRateLimitStore {
    incr (key: string, callback: (error: Error | null, result?: { current: number, ttl: number }) => void, timeWindow: number): void {
      const tier = tierOfKey(key)
      store.hit(key, timeWindow, limits.get(tier)?.redisWaitMs ?? 0, (result) => {
        counts.record(tier, result.source)
        if (result.source === 'late' || result.source === 'unavailable') options.onLocalAnswer?.()
        callback(null, result)
      })
    }

    child (): fastifyRateLimit.FastifyRateLimitStore {
      return this
    }
  }

  // `global: false`: no route hook of the package's own; the gate calls the check below.
  await app.register(fastifyRateLimit, { global: false, store: TierStore })
  app.decorateRequest('rateLimitCount', null)
  const check = app.createRateLimit({
    keyGenerator: (request) => {
      const count = request.rateLimitCount!
      return counterKey(count.tier, count.userId, request)
    },
    max: (request) => request.rateLimitCount!.limit.max,
    timeWindow: (request) => request.rateLimitCount!.limit.windowMs
  })

  return {
    async hit (request, tier, userId) {
      if (tier === 'exempt') return null
      const limit = limits.get(tier)
      if (limit === undefined) return null
      request.rateLimitCount = { tier, limit, userId }
      const result = await check(request)
      // No allow list is configured, so every request is counted.
      if (result.isAllowed) throw new Error('rate limiter: a request was let through uncounted')
      // A window's count against its tier's maximum: the request that makes it exceed the maximum is refused.
      options.onDecision?.(tier, !result.isExceeded)
      return {
        allowed: !result.isExceeded,
        limit: result.max,
        remaining: result.remaining,
        reset: Math.ceil((now() + result.ttl) / 1000),
        retryAfter: Math.max(1, result.ttlInSeconds)
      }
    },
    async health () {
      // Late answers loosen the limits as much as a fall-back to memory does.
      if (counts.degraded()) return 'degraded'
      return await store.health()
    },
    counts
  }
}
