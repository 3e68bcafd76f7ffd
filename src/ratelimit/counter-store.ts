// The counter store behind the limiter: Redis shared by every instance when REDIS_URL is set,
// per-instance memory otherwise — and per-instance memory for every request while Redis fails (SPEC
// Limits rule 4). Each counter is a fixed window (SPEC Limits rule 1): INCR, and PEXPIRE on the
// window's first request, in one script. Memory counters are bounded (memory-counters.ts) and read
// the injected clock, so tests can move time.
import type { Redis } from 'ioredis'
import { RATE_LIMIT_HITS_COMMAND } from '../infra/redis.js'
import { MemoryCounters } from './memory-counters.js'

/**
 * Counts every key of a batch in one atomic script: for each KEYS[i], INCR and, on the first
 * request, PEXPIRE ARGV[i] (a fixed window started by the first request); a key that somehow lost
 * its expiry gets one, so a counter can never live forever. Replies count and ttl of each key in
 * turn: {count1, ttl1, count2, ttl2, …}. One command per batch, not one per request: ioredis
 * spends ~5 µs building, sending and resolving each command, more than Redis spends counting.
 * (All keys go to the one Redis of REDIS_URL; a Redis Cluster would need them in one hash slot.)
 */
const HITS_SCRIPT = `
local counts = {}
for i, key in ipairs(KEYS) do
  local count = redis.call('INCR', key)
  local ttl = redis.call('PTTL', key)
  if count == 1 or ttl < 0 then
    redis.call('PEXPIRE', key, ARGV[i])
    ttl = tonumber(ARGV[i])
  end
  counts[2 * i - 1] = count
  counts[2 * i] = ttl
end
return counts
`

interface HitsCommand {
  /** HITS_SCRIPT: the number of keys, the keys, then each key's window in milliseconds. */
  [RATE_LIMIT_HITS_COMMAND] (numberOfKeys: number, ...keysThenWindows: Array<string | number>): Promise<unknown>
}

/** Receives the count; never an error (the store answers from memory instead). */
type Answer = (result: StoreResult) => void

/** A count waiting for the next batch to Redis, with this instance's own count to answer if Redis fails or is late. */
interface PendingHit {
  key: string
  windowMs: number
  waitMs: number
  answer: Answer
  answered: boolean
  localCount: number
  localTtl: number
}

/** While Redis fails, a background PING every this often decides when shared counting resumes. */
const PROBE_EVERY_MS = 250

export type StoreMode = 'memory' | 'shared' | 'fallback'

/** Who answered: Redis in time, memory by design (no Redis), or memory because Redis was late or failing. */
export type AnswerSource = 'shared' | 'memory' | 'late' | 'unavailable'

export interface StoreResult {
  current: number
  /** Milliseconds until the window ends. */
  ttl: number
  source: AnswerSource
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
  private readonly redis: (Redis & HitsCommand) | undefined
  private failing = false
  private probeTimer: NodeJS.Timeout | undefined
  private probing = false
  private closed = false
  private pending: PendingHit[] = []

  constructor (private readonly options: CounterStoreOptions) {
    this.memory = options.memory ?? new MemoryCounters()
    if (options.redis !== undefined) {
      // ioredis sends EVALSHA and falls back to EVAL when the server lost its script cache (restart).
      // The client sends this command unpipelined (src/infra/redis.ts): it is batched here.
      if (!(RATE_LIMIT_HITS_COMMAND in options.redis)) options.redis.defineCommand(RATE_LIMIT_HITS_COMMAND, { lua: HITS_SCRIPT })
      this.redis = options.redis as Redis & HitsCommand
    }
  }

  get mode (): StoreMode {
    if (this.redis === undefined) return 'memory'
    return this.failing ? 'fallback' : 'shared'
  }

  /**
   * Counts one request. Never fails and never waits longer than `waitMs` (its tier's, tiers.ts):
   * Redis not connected, erroring or slower than that means this instance's memory count answers
   * (source `unavailable` or `late`); Redis still counts a late one when its reply comes, and only an
   * error or the client's command timeout (src/infra/redis.ts) switches the instance to memory. The
   * memory counters always count too, so when Redis drops mid-window this instance carries on from
   * what it has seen instead of from zero.
   *
   * Counts bound for Redis are sent together once per turn of the event loop (one script call for
   * every request read in that turn): requests arrive in separate I/O callbacks, so ioredis's
   * auto-pipelining, which flushes on the next tick, would send each on its own.
   */
  hit (key: string, windowMs: number, waitMs: number, answer: Answer): void {
    const now = this.options.now()
    const local = this.memory.hit(key, windowMs, now)
    const redis = this.redis
    if (redis !== undefined && !this.failing) {
      if (redis.status === 'ready') {
        if (this.pending.length === 0) setImmediate(this.flush)
        this.pending.push({ key, windowMs, waitMs, answer, answered: false, localCount: local.count, localTtl: local.resetAtMs - now })
        return
      }
      this.fail(new Error(`redis is ${redis.status}`))
    }
    // No Redis, or it is failing: this instance's own count answers.
    answer({ current: local.count, ttl: local.resetAtMs - now, source: redis === undefined ? 'memory' : 'unavailable' })
  }

  private readonly flush = (): void => {
    const batch = this.pending
    this.pending = []
    const redis = this.redis
    if (redis === undefined || redis.status !== 'ready') {
      this.fail(new Error(`redis is ${redis?.status ?? 'absent'}`))
      for (const hit of batch) answerLocally(hit, 'unavailable')
      return
    }
    const keys = batch.map((hit) => this.options.keyPrefix + hit.key)
    const windows = batch.map((hit) => hit.windowMs)
    // One timer per distinct wait in the batch (a batch mixes tiers). Each check is put off to the
    // end of the loop turn in which its timer fires: a reply that came in while the event loop was
    // busy elsewhere is read first, and still answers.
    const timers = [...new Set(batch.map((hit) => hit.waitMs))].map((waitMs) => setTimeout(() => {
      setImmediate(() => {
        for (const hit of batch) if (hit.waitMs <= waitMs) answerLocally(hit, 'late')
      })
    }, waitMs))
    const settled = (): void => { for (const timer of timers) clearTimeout(timer) }
    const failed = (error: unknown): void => {
      this.fail(error)
      for (const hit of batch) answerLocally(hit, 'unavailable')
    }
    redis.rateLimitHits(batch.length, ...keys, ...windows).then((reply) => {
      settled()
      if (!isCountsOf(reply, batch.length)) { failed(new Error('unexpected reply to the rate-limit script')); return }
      for (let i = 0; i < batch.length; i++) {
        const hit = batch[i]!
        if (hit.answered) continue
        hit.answered = true
        hit.answer({ current: reply[2 * i]!, ttl: reply[2 * i + 1]!, source: 'shared' })
      }
    }, (error: unknown) => {
      settled()
      failed(error)
    })
  }

  /** The cache part of the health report: degraded while counting falls back to memory (late answers are the limiter's to add). */
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

/** HITS_SCRIPT's reply for `hits` keys: a count and a ttl for each. */
function isCountsOf (reply: unknown, hits: number): reply is number[] {
  return Array.isArray(reply) && reply.length === 2 * hits && reply.every((value) => typeof value === 'number')
}

function answerLocally (hit: PendingHit, source: 'late' | 'unavailable'): void {
  if (hit.answered) return
  hit.answered = true
  hit.answer({ current: hit.localCount, ttl: hit.localTtl, source })
}
