// The counter store behind the limiter, in @fastify/rate-limit's store shape (`incr(key, cb,
// timeWindow, max)`, `child()`): Redis shared by every instance when REDIS_URL is set, per-instance
// memory otherwise — and per-instance memory for every request while Redis fails (SPEC Limits
// rule 4). The library's own RedisStore has no fallback (its `skipOnError` lets requests through
// uncounted) and its LocalStore reads Date.now() (no test clock) and is an LRU that may drop a live
// window while expired ones stay, hence this store.
import type { Redis } from 'ioredis'
import { MemoryCounters } from './memory-counters.js'

/** INCR and the first request's PEXPIRE in one atomic script: a fixed window started by the first
 *  request. A key that somehow lost its expiry gets one, so a counter can never live forever. */
const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if count == 1 or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}
`

interface HitCommand {
  rateLimitHit (key: string, windowMs: number): Promise<[number, number]>
}

/** While Redis fails, a background PING every this often decides when shared counting resumes. */
const PROBE_EVERY_MS = 250

export type StoreMode = 'memory' | 'shared' | 'fallback'

export interface StoreResult {
  current: number
  /** Milliseconds until the window ends. */
  ttl: number
}

export interface StoreEvents {
  fallback (error: unknown): void
  resumed (): void
}

export interface CounterStoreOptions {
  redis: Redis | undefined
  /** Prepended to every Redis key (RATE_LIMIT_KEY_PREFIX). */
  keyPrefix: string
  now: () => number
  memory?: MemoryCounters
  events: StoreEvents
}

export class CounterStore {
  readonly memory: MemoryCounters
  private readonly redis: (Redis & HitCommand) | undefined
  private failing = false
  private probeTimer: NodeJS.Timeout | undefined
  private probing = false
  private closed = false

  constructor (private readonly options: CounterStoreOptions) {
    this.memory = options.memory ?? new MemoryCounters()
    if (options.redis !== undefined) {
      // ioredis sends EVALSHA and falls back to EVAL when the server lost its script cache (restart).
      if (!('rateLimitHit' in options.redis)) options.redis.defineCommand('rateLimitHit', { numberOfKeys: 1, lua: HIT_SCRIPT })
      this.redis = options.redis as Redis & HitCommand
    }
  }

  get mode (): StoreMode {
    if (this.redis === undefined) return 'memory'
    return this.failing ? 'fallback' : 'shared'
  }

  /**
   * Counts one request. Never fails and never waits longer than the Redis client's command timeout:
   * Redis not connected, erroring or too slow means this instance's memory count answers. The
   * memory counters always count too, so when Redis drops mid-window this instance carries on from
   * what it has seen instead of from zero.
   */
  incr (key: string, callback: (error: Error | null, result?: StoreResult) => void, timeWindow: number, _max?: number): void {
    const now = this.options.now()
    const local = this.memory.hit(key, timeWindow, now)
    const redis = this.redis
    if (redis !== undefined && !this.failing) {
      if (redis.status === 'ready') {
        redis.rateLimitHit(this.options.keyPrefix + key, timeWindow).then(([current, ttl]) => {
          callback(null, { current, ttl })
        }, (error: unknown) => {
          this.fail(error)
          callback(null, { current: local.count, ttl: local.resetAtMs - now })
        })
        return
      }
      this.fail(new Error(`redis is ${redis.status}`))
    }
    // No Redis, or it is failing: this instance's own count answers.
    callback(null, { current: local.count, ttl: local.resetAtMs - now })
  }

  /** @fastify/rate-limit asks every limiter it creates for a child store; all share these counters. */
  child (): this {
    return this
  }

  /** The cache part of the health report: degraded while counting falls back to memory. */
  async health (): Promise<'healthy' | 'degraded'> {
    if (this.redis === undefined) return 'healthy'
    if (this.failing) return 'degraded'
    try {
      await this.redis.ping()
      return 'healthy'
    } catch (error) {
      this.fail(error)
      return 'degraded'
    }
  }

  close (): void {
    this.closed = true
    clearInterval(this.probeTimer)
  }

  private fail (error: unknown): void {
    if (this.failing || this.closed) return
    this.failing = true
    this.options.events.fallback(error)
    this.probeTimer = setInterval(() => { void this.probe() }, PROBE_EVERY_MS)
    this.probeTimer.unref()
  }

  /** Runs in the background only: no request ever waits for it. */
  private async probe (): Promise<void> {
    const redis = this.redis
    if (redis === undefined || this.probing || redis.status !== 'ready') return
    this.probing = true
    try {
      await redis.ping()
      if (this.closed) return
      this.failing = false
      clearInterval(this.probeTimer)
      this.probeTimer = undefined
      this.options.events.resumed()
    } catch {
      // Still failing: try again on the next tick of the probe timer.
    } finally {
      this.probing = false
    }
  }
}
