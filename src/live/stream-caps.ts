// SPEC Limits: at most 5 open event streams per user and 20 per client IP. Counted cluster-wide
// through expiring slots (src/infra/stream-slots.ts), so a crashed client or instance cannot leak one.
import { randomBytes } from 'node:crypto'
import type { Slot, SlotStore } from '../infra/stream-slots.js'

export const STREAMS_PER_USER = 5
export const STREAMS_PER_IP = 20
/** What a refused client is told to wait: a slot frees as soon as one of its streams closes. */
export const STREAM_CAP_RETRY_AFTER_S = 5

export type StreamAdmission = { admitted: true, slot: Slot } | { admitted: false, limit: 'user' | 'ip' }

export interface StreamCaps {
  admit (userId: string, ip: string): Promise<StreamAdmission>
  release (slot: Slot): void
  /** Keeps the slots of open streams from expiring; called on every heartbeat. */
  refresh (slots: Iterable<Slot>): void
  /** Open streams of the user across the cluster (this process only without Redis). */
  openStreams (userId: string): Promise<number>
}

const userKey = (userId: string): string => `sse:user:${userId}`
const ipKey = (ip: string): string => `sse:ip:${ip}`

/** Slots live three heartbeats (and at least 5 s more), so a missed refresh or two never drops one. */
export function createStreamCaps (slots: SlotStore, heartbeatMs: number): StreamCaps {
  const ttlMs = 3 * heartbeatMs + 5_000
  return {
    async admit (userId, ip) {
      const id = randomBytes(12).toString('base64url')
      const claimed = await slots.claim(id, [{ key: userKey(userId), limit: STREAMS_PER_USER }, { key: ipKey(ip), limit: STREAMS_PER_IP }], ttlMs)
      if ('full' in claimed) return { admitted: false, limit: claimed.full === 0 ? 'user' : 'ip' }
      return { admitted: true, slot: claimed.slot }
    },
    release: (slot) => { slots.release(slot) },
    refresh: (held) => { slots.refresh(held, ttlMs) },
    openStreams: async (userId) => await slots.count(userKey(userId))
  }
}
