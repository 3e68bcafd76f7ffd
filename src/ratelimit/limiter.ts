// The one rate limiter of both gateways (SPEC Limits rules 1–7). The REST hook and the RPC
// interceptor both call `hit(request, tier, userId)` with the Fastify request and map the decision
// to their own reply; counting, keys and client addresses live only here.
//
// @fastify/rate-limit does the counting arithmetic through `createRateLimit` (key generator, max,
// window, its store interface, which CounterStore implements). Its route hooks are not used: they
// run after every instance-level hook (we must count before the access check, so 401s are counted
// and carry headers), they only write one header family with a reset in delta seconds (DECISIONS §8
// wants both families with the window end in Unix seconds), and they do not reach RPC methods,
// which share one Fastify route per procedure but have their own tiers.
import fastifyRateLimit, { type FastifyRateLimitStoreCtor } from '@fastify/rate-limit'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Redis } from 'ioredis'
import type { Config } from '../config.js'
import { AppError } from '../core/errors.js'
import type { Clock } from '../infra/clock.js'
import { CounterStore } from './counter-store.js'
import { tierTable, type Tier, type TierTable } from './tiers.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The counter key of the request's current `hit` (set just before the library reads it). */
    rateLimitKey: string
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
  /** The cache part of the health report. */
  health (): Promise<'healthy' | 'degraded'>
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

// @fastify/rate-limit builds its store itself (`new store(params)`); this hands it the one built here,
// which the health report and shutdown also need.
function provided (store: CounterStore): FastifyRateLimitStoreCtor {
  return function ProvidedStore () { return store } as unknown as FastifyRateLimitStoreCtor
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
  app.addHook('onClose', async () => { store.close() })

  // Registered without global hooks: no route is limited by the plugin itself, only through `hit`.
  await app.register(fastifyRateLimit, { global: false, store: provided(store) })
  // The counter key reaches the library's key generator on the request itself: a WeakMap entry per
  // request measured about 0.8 µs, more than the memory count it feeds.
  app.decorateRequest('rateLimitKey', '')
  const keyGenerator = (request: FastifyRequest): string => request.rateLimitKey
  const table: TierTable = tierTable(config)
  const checkers = new Map<Tier, ReturnType<FastifyInstance['createRateLimit']>>()
  for (const [tier, limit] of Object.entries(table) as Array<[Exclude<Tier, 'exempt'>, TierTable[keyof TierTable]]>) {
    const max = options.maxOverride?.[tier] ?? limit.max
    checkers.set(tier, app.createRateLimit({ max, timeWindow: limit.windowMs, keyGenerator }))
  }

  return {
    async hit (request, tier, userId) {
      const check = checkers.get(tier)
      if (check === undefined) return null // exempt
      request.rateLimitKey = counterKey(tier, userId, request)
      const result = await check(request)
      if (result.isAllowed) return null // no allow-list is configured; kept for the type
      const retryAfter = Math.max(1, Math.ceil(result.ttl / 1000))
      return {
        allowed: !result.isExceeded,
        limit: result.max,
        remaining: result.remaining,
        reset: Math.ceil((now() + result.ttl) / 1000),
        retryAfter
      }
    },
    health: async () => await store.health()
  }
}
