// Per-instance fixed-window counters: the whole store without REDIS_URL, and the fallback while Redis
// fails. Bounded: expired windows are swept, and past `maxEntries` the oldest-started windows are
// dropped, so a flood of new keys (random IPs) costs a fixed amount of memory, never more.

export interface WindowCount {
  /** Requests counted in the current window, this one included. */
  count: number
  /** When the window ends (ms since the epoch): the counter is discarded then. */
  resetAtMs: number
}

/** 100 000 windows is roughly 15 MB of keys and counters; far more clients than one instance serves per minute. */
export const DEFAULT_MAX_ENTRIES = 100_000
/** Expired windows are swept at most this often (on the next count, no timer). */
const SWEEP_EVERY_MS = 60_000
/** When full of live windows, drop this share at once so the O(n) pass is paid once per many inserts. */
const EVICT_SHARE = 0.1

export class MemoryCounters {
  // A Map iterates in insertion order and a window is re-inserted when it restarts, so the first
  // entries are the windows that started earliest: the ones nearest to their end.
  private readonly windows = new Map<string, WindowCount>()
  private nextSweepMs = 0

  constructor (readonly maxEntries = DEFAULT_MAX_ENTRIES) {}

  get size (): number {
    return this.windows.size
  }

  /** Counts one request for `key`; the first request of a window starts it (SPEC Limits rule 1). */
  hit (key: string, windowMs: number, nowMs: number): WindowCount {
    if (nowMs >= this.nextSweepMs) this.sweep(nowMs)
    const current = this.windows.get(key)
    if (current !== undefined && current.resetAtMs > nowMs) {
      current.count += 1
      return { count: current.count, resetAtMs: current.resetAtMs }
    }
    if (current !== undefined) this.windows.delete(key)
    else if (this.windows.size >= this.maxEntries) this.makeRoom(nowMs)
    this.windows.set(key, { count: 1, resetAtMs: nowMs + windowMs })
    return { count: 1, resetAtMs: nowMs + windowMs }
  }

  private sweep (nowMs: number): void {
    this.nextSweepMs = nowMs + SWEEP_EVERY_MS
    for (const [key, window] of this.windows) {
      if (window.resetAtMs <= nowMs) this.windows.delete(key)
    }
  }

  private makeRoom (nowMs: number): void {
    this.sweep(nowMs)
    if (this.windows.size < this.maxEntries) return
    let drop = Math.max(1, Math.ceil(this.maxEntries * EVICT_SHARE))
    for (const key of this.windows.keys()) {
      if (drop-- === 0) break
      this.windows.delete(key)
    }
  }
}
