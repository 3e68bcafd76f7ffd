// Sessions this instance has recently found valid, with their user, so an authenticated request
// (and "who am I") needs no database round trip. An entry goes at once when this instance revokes
// the session, within milliseconds when another instance does (session signals over LISTEN/NOTIFY),
// all at once when the signal listener reconnected (it may have missed some), and in any case after
// TTL_MS — the bound on how long a revocation whose signal was lost could go unnoticed. Whatever
// changes a user row (account deletion, a profile update) forgets its user here and signals it to
// the other instances (auth's `userChanged`).
//
// What a distinct caller costs (bench/admission.ts): one read of its session per TTL. So that no
// request waits for it, and that a thousand callers do not cost a thousand round trips:
// - reads are batched: every session a request waits for in one turn of the event loop is read by
//   one query (at most MAX_BATCH ids), renewals (below) go together every RENEWAL_DELAY_MS, and
//   concurrent requests of one session share one read (the requests of a page load, or of
//   load-generator connections in lockstep);
// - an entry in use is renewed before it expires: once older than REFRESH_AFTER_MS it is still
//   served (it is within the TTL, as before) and re-read in the background, so a busy session is
//   re-read about every REFRESH_AFTER_MS and never served older than TTL_MS.
// A read that was under way when its session (or user, or everything) was forgotten is not cached,
// and no request joins it any more: it may have read the row before the revocation or change committed.
//
// Refusals are remembered too, with no expiry: a revoked session is never un-revoked, and a session
// the database does not have never appears later (its token is signed only after its row commits;
// deleted sessions stay deleted). So a logged-out cookie replayed ten thousand times costs one read,
// not one per request. Only tokens that passed their signature check reach the cache, and the
// refusals it keeps are bounded (MAX_REFUSED, least recently used out): a flood of well-signed
// tokens naming sessions that never existed costs a read each and a fixed amount of memory.
import type { User } from '../users/users.types.js'

export const SESSION_CACHE_TTL_MS = 10_000
/** An entry older than this is renewed in the background while it is still served. */
export const SESSION_REFRESH_AFTER_MS = 5_000
const MAX_ENTRIES = 50_000
/** Refused session ids remembered (about 100 bytes each). */
export const MAX_REFUSED = 10_000
/** Most session ids in one query. */
const MAX_BATCH = 500
/**
 * Renewals nobody waits for are sent at most this often, so the sessions of a thousand callers coming
 * due over a few seconds are renewed by a few queries, not one each. Well inside the TTL.
 */
export const RENEWAL_DELAY_MS = 200

/** A session as the database has it, with its user. */
export interface SessionRecord {
  userId: string
  expiresAt: Date
  revokedAt: Date | null
  user: User
  /** The user is suspended (DECISIONS §11): the gate refuses all but a few operations. */
  suspended: boolean
}

export interface CachedSession {
  userId: string
  expiresAt: Date
  user: User
  suspended: boolean
  /** When the read this entry comes from was sent (on the cache's monotonic `now`). */
  cachedAt: number
}

/** Reads sessions by id; a missing id is a session that does not exist. */
export type SessionLoader = (sessionIds: readonly string[]) => Promise<Map<string, SessionRecord>>

/** Why a session is refused for good: revoked, or not in the database at all. */
export type Refusal = 'revoked' | 'absent'

export interface SessionCache {
  /** The session when cached within the TTL (renewed in the background once due) and not expired
   *  at `nowMs` (wall clock, as the session's expiry); undefined otherwise. */
  get (sessionId: string, nowMs: number): CachedSession | undefined
  /** Why the session was refused, when a read found it revoked or absent (or it was revoked here). */
  refusal (sessionId: string): Refusal | undefined
  /** A revocation this instance committed or heard of: forgotten and refused from now on, with no read. */
  refuse (sessionId: string, why: Refusal): void
  /** Reads the session from the database (batched, shared by concurrent callers) and caches it when valid. */
  load (sessionId: string): Promise<SessionRecord | undefined>
  forgetSession (sessionId: string): void
  forgetUser (userId: string): void
  clear (): void
}

/** What was forgotten while one query was under way. */
interface Batch {
  sentAt: number
  forgottenSessions: Set<string>
  forgottenUsers: Set<string>
  forgotAll: boolean
}

/** A read asked for: the callers of `load` await its promise. */
interface Waiting {
  sessionId: string
  promise: Promise<SessionRecord | undefined>
  /** In a batch already sent (a caller joining it waits for that query). */
  sent: boolean
  resolve: (record: SessionRecord | undefined) => void
  reject: (error: unknown) => void
}

export interface SessionCacheOptions {
  load: SessionLoader
  /** A monotonic clock (ms) for the entries' ages: a wall clock set back would keep them for as long. */
  now: () => number
  /** A background renewal that failed (the entry then expires with its TTL). */
  onRefreshError?: (error: unknown) => void
  /** How long renewals wait to share a query (RENEWAL_DELAY_MS; tests shorten it). */
  renewalDelayMs?: number
}

export function createSessionCache (options: SessionCacheOptions): SessionCache {
  const entries = new Map<string, CachedSession>()
  /** Least recently used first (Map insertion order; a hit moves the id to the end). */
  const refused = new Map<string, Refusal>()
  /** Reads asked for and not answered yet, by session id: a caller of `load` joins the one there is.
   *  A forgotten session's read leaves this map (later callers start their own) but still answers. */
  const waiting = new Map<string, Waiting>()
  /** Reads for the next batch (foreground misses and background renewals alike). */
  let queued: Waiting[] = []
  /** A batch goes at the end of this turn of the event loop (someone waits for it)... */
  let flushSoon = false
  /** ...or, when it holds renewals only, after renewalDelayMs, so that they share queries. */
  let renewalTimer: NodeJS.Timeout | undefined
  const renewalDelayMs = options.renewalDelayMs ?? RENEWAL_DELAY_MS
  const underWay = new Set<Batch>()

  function cache (sessionId: string, record: SessionRecord, readAt: number): void {
    // An expired session is refused on its first `get` (expiry is on the wall clock, ages are not).
    if (record.revokedAt !== null) {
      entries.delete(sessionId)
      return
    }
    // Bounded: when full, the oldest insertion goes (Map keeps insertion order).
    if (!entries.has(sessionId) && entries.size >= MAX_ENTRIES) {
      const oldest = entries.keys().next().value
      if (oldest !== undefined) entries.delete(oldest)
    }
    entries.delete(sessionId) // re-inserted last: renewed entries are the newest
    entries.set(sessionId, { userId: record.userId, expiresAt: record.expiresAt, user: record.user, suspended: record.suspended, cachedAt: readAt })
  }

  function refuse (sessionId: string, why: Refusal): void {
    refused.delete(sessionId)
    if (refused.size >= MAX_REFUSED) {
      const oldest = refused.keys().next().value
      if (oldest !== undefined) refused.delete(oldest)
    }
    refused.set(sessionId, why)
  }

  function forgetSession (sessionId: string): void {
    entries.delete(sessionId)
    waiting.delete(sessionId)
    for (const batch of underWay) batch.forgottenSessions.add(sessionId)
  }

  /** A read of the session: the one already asked for, or a new one in the next batch. A caller
   *  who waits for it (`urgent`) has the batch sent at the end of this turn of the event loop. */
  function request (sessionId: string, urgent: boolean): Waiting {
    let entry = waiting.get(sessionId)
    if (entry === undefined) {
      let settle!: Pick<Waiting, 'resolve' | 'reject'>
      const promise = new Promise<SessionRecord | undefined>((resolve, reject) => { settle = { resolve, reject } })
      entry = { sessionId, promise, sent: false, ...settle }
      waiting.set(sessionId, entry)
      queued.push(entry)
    }
    if (!entry.sent) {
      if (urgent && !flushSoon) {
        flushSoon = true
        setImmediate(flush)
      } else if (!urgent && !flushSoon && renewalTimer === undefined) {
        renewalTimer = setTimeout(flush, renewalDelayMs)
        renewalTimer.unref()
      }
    }
    return entry
  }

  function flush (): void {
    flushSoon = false
    clearTimeout(renewalTimer)
    renewalTimer = undefined
    const all = queued
    queued = []
    for (const waiter of all) waiter.sent = true
    for (let start = 0; start < all.length; start += MAX_BATCH) void send(all.slice(start, start + MAX_BATCH))
  }

  async function send (waiters: Waiting[]): Promise<void> {
    // A read sent after a session was forgotten sees its revocation (it is forgotten once that is
    // committed); one already under way may not, so what is forgotten meanwhile is noted on it.
    const batch: Batch = { sentAt: options.now(), forgottenSessions: new Set(), forgottenUsers: new Set(), forgotAll: false }
    underWay.add(batch)
    let records: Map<string, SessionRecord>
    try {
      records = await options.load(waiters.map((w) => w.sessionId))
    } catch (error) {
      underWay.delete(batch)
      for (const waiter of waiters) {
        if (waiting.get(waiter.sessionId) === waiter) waiting.delete(waiter.sessionId)
        waiter.reject(error)
      }
      return
    }
    underWay.delete(batch)
    for (const waiter of waiters) {
      const id = waiter.sessionId
      const record = records.get(id)
      const forgotten = batch.forgotAll || batch.forgottenSessions.has(id) || (record !== undefined && batch.forgottenUsers.has(record.userId))
      // A refusal is final whatever was forgotten meanwhile; only a valid read can be outdated.
      if (record === undefined) {
        entries.delete(id)
        refuse(id, 'absent')
      } else if (record.revokedAt !== null) {
        entries.delete(id)
        refuse(id, 'revoked')
      } else if (!forgotten) {
        cache(id, record, batch.sentAt)
      }
      if (waiting.get(id) === waiter) waiting.delete(id)
      waiter.resolve(record)
    }
  }

  return {
    get (sessionId, nowMs) {
      const entry = entries.get(sessionId)
      if (entry === undefined) return undefined
      const age = options.now() - entry.cachedAt
      if (age >= SESSION_CACHE_TTL_MS || entry.expiresAt.getTime() <= nowMs) {
        entries.delete(sessionId)
        return undefined
      }
      if (age >= SESSION_REFRESH_AFTER_MS && !waiting.has(sessionId)) {
        // Renewed in the background; nobody awaits it, so a failed read only leaves the entry to expire.
        request(sessionId, false).promise.catch((error: unknown) => { options.onRefreshError?.(error) })
      }
      return entry
    },
    refusal (sessionId) {
      const why = refused.get(sessionId)
      if (why !== undefined) {
        refused.delete(sessionId)
        refused.set(sessionId, why)
      }
      return why
    },
    refuse (sessionId, why) {
      forgetSession(sessionId)
      refuse(sessionId, why)
    },
    async load (sessionId) {
      return await request(sessionId, true).promise
    },
    forgetSession,
    forgetUser (userId) {
      for (const [id, entry] of entries) if (entry.userId === userId) entries.delete(id)
      // A read under way does not say whose session it is until it answers: nobody joins any of them.
      waiting.clear()
      for (const batch of underWay) batch.forgottenUsers.add(userId)
    },
    clear () {
      entries.clear()
      waiting.clear()
      for (const batch of underWay) batch.forgotAll = true
    }
  }
}
