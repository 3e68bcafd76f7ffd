// Sessions this instance has recently found valid, with their user, so an authenticated request
// (and "who am I") needs no database round trip. An entry goes at once when this instance revokes
// the session, within milliseconds when another instance does (session signals over LISTEN/NOTIFY),
// all at once when the signal listener reconnected (it may have missed some), and in any case after
// TTL_MS — the bound on how long a revocation whose signal was lost could go unnoticed. Whatever
// changes a user row (account deletion, a profile update) forgets its user here and signals it to
// the other instances (auth's `userChanged`).
import type { User } from '../users/users.types.js'

export const SESSION_CACHE_TTL_MS = 10_000
const MAX_ENTRIES = 50_000

interface CachedSession {
  userId: string
  expiresAt: Date
  user: User
  cachedAt: number
}

export interface SessionCache {
  get (sessionId: string, nowMs: number): CachedSession | undefined
  set (sessionId: string, session: { userId: string, expiresAt: Date, user: User }, nowMs: number): void
  forgetSession (sessionId: string): void
  forgetUser (userId: string): void
  clear (): void
}

export function createSessionCache (): SessionCache {
  const entries = new Map<string, CachedSession>()
  return {
    get (sessionId, nowMs) {
      const entry = entries.get(sessionId)
      if (entry === undefined) return undefined
      if (nowMs - entry.cachedAt >= SESSION_CACHE_TTL_MS || entry.expiresAt.getTime() <= nowMs) {
        entries.delete(sessionId)
        return undefined
      }
      return entry
    },
    set (sessionId, session, nowMs) {
      // Bounded: when full, the oldest insertion goes (Map keeps insertion order).
      if (entries.size >= MAX_ENTRIES) {
        const oldest = entries.keys().next().value
        if (oldest !== undefined) entries.delete(oldest)
      }
      entries.set(sessionId, { ...session, cachedAt: nowMs })
    },
    forgetSession (sessionId) {
      entries.delete(sessionId)
    },
    forgetUser (userId) {
      for (const [id, entry] of entries) if (entry.userId === userId) entries.delete(id)
    },
    clear () {
      entries.clear()
    }
  }
}
