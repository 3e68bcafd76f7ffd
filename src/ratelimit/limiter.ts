// The one rate limiter of both gateways (SPEC Limits rules 1–7). The REST hook and the RPC
// interceptor both call `hit(request, tier, userId)` with the Fastify request and map the decision
// to their own reply; counting, keys and client addresses live only here.
//
//
// The counting is the product's own rule (SPEC Limits rule 1: a fixed window per tier and caller, the
// first request starting it), done in counter-store.ts. @fastify/rate-limit is not used: its route
// hooks run after every instance-level hook (we count before the access check, so 401s are counted
// and carry headers), write one header family with a reset in delta seconds (DECISIONS §8 wants
// both families with the window end in Unix seconds), cannot give RPC methods their own tiers, and
// its Redis store lets requests through uncounted when Redis fails (SPEC wants per-instance
// counting); all that was left of it was `remaining = max - count` behind a store constructor hack.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Redis } from 'ioredis'
import type { Config } from '../config.js'
import { AppError } from '../core/errors.js'
import type { Clock } from '../infra/clock.js'
import { CounterStore, type StoreResult } from './counter-store.js'
import { createLimiterCounts, type LimiterCounts } from './limiter-counts.js'
import { tierTable, type Tier, type TierLimit, type TierTable } from './tiers.js'

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

export async function createLimiter (app: FastifyInstance, options: LimiterOptions): Promise<Limiter> {
  const { config, clock } = options
  const now = (): number => clock.now().getTime()
  const store = new CounterStore({
    redis: options.redis,
    keyPrefix: config.rateLimitKeyPrefix,
    now,
    events: {
      fallback: (error) => { app.log.warn({ err: error }, 'rate limiter: Redis unavailable, counting per instance in memory') },
      resumed: () => { app.log.info('rate limiter: Redis answers again, shared counting resumed') }
    }
  })
  const table = tierTable(config)
  const counts = createLimiterCounts({
    log: app.log,
    waitsMs: Object.fromEntries(Object.entries(table).map(([tier, limit]) => [tier, limit.redisWaitMs]))
  })
  app.addHook('onClose', async () => {
    store.close()
    counts.close()
  })

  const limits = new Map<Exclude<Tier, 'exempt'>, TierLimit>()
  for (const [tier, limit] of Object.entries(table) as Array<[Exclude<Tier, 'exempt'>, TierTable[keyof TierTable]]>) {
    limits.set(tier, { ...limit, max: options.maxOverride?.[tier] ?? limit.max })
  }

  /** A window's count against its tier's maximum: the request that makes it exceed the maximum is refused. */
  function decide (limit: TierLimit, { current, ttl }: StoreResult): LimitDecision {
    return {
      allowed: current <= limit.max,
      limit: limit.max,
      remaining: Math.max(0, limit.max - current),
      reset: Math.ceil((now() + ttl) / 1000),
      retryAfter: Math.max(1, Math.ceil(ttl / 1000))
    }
  }

  return {
    async hit (request, tier, userId) {
      if (tier === 'exempt') return null
      const limit = limits.get(tier)
      if (limit === undefined) return null
      return await new Promise<LimitDecision>((resolve) => {
        store.hit(counterKey(tier, userId, request), limit.windowMs, limit.redisWaitMs, (result) => {
          counts.record(tier, result.source)
          resolve(decide(limit, result))
        })
      })
    },
    async health () {
      // Late answers loosen the limits as much as a fall-back to memory does.
      if (counts.degraded()) return 'degraded'
      return await store.health()
    },
    counts
  }
}
