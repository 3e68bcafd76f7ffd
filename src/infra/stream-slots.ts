// Expiring slots for counting open connections (the event stream caps). Each open connection holds
// one slot per key (its user, its IP); a slot is a member of a sorted set scored by its expiry, which
// its holder pushes forward periodically. Expired members are removed before every count, so slots
// of crashed instances or vanished clients free themselves: counts always return to zero.
// Shared in Redis when configured; per-process memory otherwise, and whenever Redis does not answer
// (a slot remembers where it was taken, so it is released and refreshed there).
import type { Redis } from 'ioredis'

export type SlotPlace = 'shared' | 'local'

export interface SlotClaim {
  key: string
  limit: number
}

export interface Slot {
  readonly id: string
  readonly keys: readonly string[]
  readonly place: SlotPlace
}

export interface SlotStore {
  /** Takes a slot under every key, or none: `full` is the index of the first key at its limit. */
  claim (id: string, claims: readonly SlotClaim[], ttlMs: number): Promise<{ slot: Slot } | { full: number }>
  /** Pushes the expiry of held slots forward. */
  refresh (slots: Iterable<Slot>, ttlMs: number): void
  release (slot: Slot): void
  /** Unexpired slots under `key`, in Redis and in this process. */
  count (key: string): Promise<number>
}

// Removes expired members, then adds to every key only if none is full (atomic in Redis).
// KEYS: slot keys. ARGV: now, expiry, id, ttl, then one limit per key.
const CLAIM_SCRIPT = `
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', ARGV[1])
  if redis.call('ZCARD', key) >= tonumber(ARGV[4 + i]) then return i end
end
for i, key in ipairs(KEYS) do
  redis.call('ZADD', key, ARGV[2], ARGV[3])
  redis.call('PEXPIRE', key, ARGV[4])
end
return 0`

export function createSlotStore (options: { redis: Redis | undefined, prefix: string, now: () => number, onFallback?: (error: unknown) => void }): SlotStore {
  const { redis, prefix, now } = options
  const local = new Map<string, Map<string, number>>()

  function localCount (key: string): number {
    const members = local.get(key)
    if (members === undefined) return 0
    const at = now()
    for (const [id, expiry] of members) if (expiry <= at) members.delete(id)
    if (members.size === 0) local.delete(key)
    return members.size
  }

  function claimLocally (id: string, claims: readonly SlotClaim[], ttlMs: number): { slot: Slot } | { full: number } {
    const full = claims.findIndex((c) => localCount(c.key) >= c.limit)
    if (full !== -1) return { full }
    for (const { key } of claims) {
      let members = local.get(key)
      if (members === undefined) local.set(key, members = new Map())
      members.set(id, now() + ttlMs)
    }
    return { slot: { id, keys: claims.map((c) => c.key), place: 'local' } }
  }

  /** Removes a slot from Redis, best effort: if this fails too, the slot expires by itself. */
  function forget (shared: Redis, id: string, keys: readonly string[]): void {
    const pipeline = shared.pipeline()
    for (const key of keys) pipeline.zrem(prefix + key, id)
    pipeline.exec().catch(() => {})
  }

  const usable = (): Redis | undefined => redis !== undefined && redis.status === 'ready' ? redis : undefined

  return {
    async claim (id, claims, ttlMs) {
      const shared = usable()
      if (shared !== undefined) {
        try {
          const at = now()
          // Slots taken in memory while Redis was away still count against the limit.
          const limits = claims.map((c) => Math.max(0, c.limit - localCount(c.key)))
          const full = await shared.eval(CLAIM_SCRIPT, claims.length, ...claims.map((c) => prefix + c.key), at, at + ttlMs, id, ttlMs, ...limits)
          if (full !== 0) return { full: Number(full) - 1 }
          return { slot: { id, keys: claims.map((c) => c.key), place: 'shared' } }
        } catch (error) {
          options.onFallback?.(error)
          // A timed-out script may still have run: take back whatever it added (the id is unique, and
          // commands on one connection run in order), or the slot would hold a place until it expires.
          forget(shared, id, claims.map((c) => c.key))
        }
      }
      return claimLocally(id, claims, ttlMs)
    },

    refresh (slots, ttlMs) {
      const expiry = now() + ttlMs
      const shared = usable()
      const pipeline = shared?.pipeline()
      for (const slot of slots) {
        if (slot.place === 'local') {
          for (const key of slot.keys) local.get(key)?.set(slot.id, expiry)
        } else if (pipeline !== undefined) {
          for (const key of slot.keys) {
            // Not XX: a slot that expired while Redis was away comes back with its holder.
            pipeline.zadd(prefix + key, expiry, slot.id)
            pipeline.pexpire(prefix + key, ttlMs)
          }
        }
      }
      // A failed refresh only lets the slot expire early; the next refresh puts it back.
      pipeline?.exec().catch(() => {})
    },

    release (slot) {
      if (slot.place === 'local') {
        for (const key of slot.keys) {
          const members = local.get(key)
          members?.delete(slot.id)
          if (members?.size === 0) local.delete(key)
        }
        return
      }
      const shared = usable()
      if (shared === undefined) return // it expires by itself
      forget(shared, slot.id, slot.keys)
    },

    async count (key) {
      const inMemory = localCount(key)
      const shared = usable()
      if (shared === undefined) return inMemory
      try {
        return inMemory + await shared.zcount(prefix + key, `(${now()}`, '+inf')
      } catch {
        return inMemory
      }
    }
  }
}
