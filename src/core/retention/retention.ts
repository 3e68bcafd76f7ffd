// Retention (issue 38 items 4 and 9): every table whose rows expire is pruned, in short batches until
// none is left past its retention, by one instance at a time — the pattern of the event log's prune
// (src/live/event-log-bus.ts), for every other growing table, in one place. docs/operations.md lists
// each growing table with its retention; what is kept on purpose is kept:
// - a used refresh token stays until it expires, since one presented again is reuse and revokes its
//   session (DECISIONS §3); the tokens of a revoked or expired session go first, then the session;
// - a revoked or expired session's row goes at once: its tokens are refused without it (a missing
//   session is refused like a revoked one, and each instance remembers the refusal in memory);
// - a link or invitation is kept a while past its expiry where the service still answers "expired"
//   for it (login polls: POLL_GRACE_MS; invitations: a day);
// - the event log has its own prune (24 hours, src/live/); the audit log is never pruned.
//
// Every instance runs this every EVERY_MS; each batch is its own transaction under a
// try-advisory-lock, so while one instance prunes another's run finds the lock taken and stops. A run
// goes on until every rule's last batch came back short, so it keeps pace with whatever was created
// since the last one (bench/retention.ts measures a day of idempotency keys at the write tier).
import { sql, type RawBuilder } from 'kysely'
import type { Db } from '../../db/database.js'
import type { Database } from '../../db/schema.js'
import { POLL_GRACE_MS } from '../auth/auth.types.js'
import type { CoreDeps } from '../deps.js'
import { startPeriodicJob, type PeriodicJob } from '../periodic-job.js'
import { pruneExpiredKeys } from '../idempotency/idempotency.repository.js'
import { deleteExpired, inRetentionBatch } from './retention.repository.js'

/** Rows one batch (one short transaction) deletes at most. */
export const RETENTION_BATCH = 1_000
/** The pause between two batches, so requests get the database between them (PGlite has one connection). */
const PAUSE_MS = 10
/** How often each instance runs the rules. */
export const RETENTION_EVERY_MS = 5 * 60_000
/** The first run comes a whole period after start-up: instances restarting in a loop never prune
 *  first thing (and a short-lived process, a test's, never prunes in the background). */
const FIRST_RUN_MS = RETENTION_EVERY_MS
const DAY_MS = 24 * 3600_000

export interface RetentionRule {
  /** The table, and which of its rows go (logs, reports). */
  readonly name: string
  readonly table: keyof Database
  /** Deletes one batch of at most `limit` rows past their retention at `now`; answers how many. */
  readonly prune: (db: Db, now: Date, limit: number) => Promise<number>
}

const before = (now: Date, ms: number): Date => new Date(now.getTime() - ms)
function rule (name: string, table: keyof Database, expired: (now: Date) => RawBuilder<boolean>): RetentionRule {
  return { name, table, prune: async (db, now, limit) => await deleteExpired(db, table, expired(now), limit) }
}

/** In this order: a session's refresh tokens go before it, so deleting it cascades to none. */
export const RETENTION_RULES: readonly RetentionRule[] = [
  rule('refresh_tokens: expired (used ones kept until then, for reuse detection)', 'refresh_tokens', (now) => sql`expires_at <= ${now}`),
  rule('refresh_tokens: of revoked or expired sessions', 'refresh_tokens', (now) => sql`session_id in (select id from sessions where revoked_at is not null or expires_at <= ${now})`),
  rule('sessions: revoked (logged out, suspended, refresh reuse)', 'sessions', () => sql`revoked_at is not null`),
  rule('sessions: expired', 'sessions', (now) => sql`expires_at <= ${now}`),
  rule('login_links: expired, past the poll\'s grace', 'login_links', (now) => sql`expires_at <= ${before(now, POLL_GRACE_MS)}`),
  rule('deletion_tokens: expired', 'deletion_tokens', (now) => sql`expires_at <= ${now}`),
  rule('office_invites: expired a day ago (accepted ones too)', 'office_invites', (now) => sql`expires_at <= ${before(now, DAY_MS)}`),
  rule('office_invite_sends: older than a day', 'office_invite_sends', (now) => sql`sent_at <= ${before(now, DAY_MS)}`),
  rule('rtc_uid_claims: expired', 'rtc_uid_claims', (now) => sql`expires_at <= ${now}`),
  { name: 'idempotency_keys: expired', table: 'idempotency_keys', prune: pruneExpiredKeys }
]

export interface RetentionReport {
  /** Per rule: rows removed, in how many batches, the largest batch and the longest (its
   *  transaction's time, ms: what a batch holds its rows' locks for). */
  rules: Array<{ name: string, removed: number, batches: number, largestBatch: number, longestBatchMs: number }>
  /** Another instance held the lock: it is pruning, so this run stopped there. */
  yielded: boolean
}

type RetentionDeps = Pick<CoreDeps, 'db' | 'clock' | 'log'>

const pause = async (): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, PAUSE_MS)) }

/** One run: every rule, batch after batch, until its last batch came back short (or `stopped`). */
export async function pruneExpiredRows (deps: RetentionDeps, options: { stopped?: () => boolean, batch?: number } = {}): Promise<RetentionReport> {
  const now = deps.clock.now()
  const limit = options.batch ?? RETENTION_BATCH
  const report: RetentionReport = { rules: [], yielded: false }
  for (const { name, prune } of RETENTION_RULES) {
    const done = { name, removed: 0, batches: 0, largestBatch: 0, longestBatchMs: 0 }
    report.rules.push(done)
    for (;;) {
      if (options.stopped?.() === true) return report
      const started = performance.now()
      const removed = await inRetentionBatch(deps.db, async (trx) => await prune(trx, now, limit))
      if (removed === undefined) {
        report.yielded = true
        return report
      }
      done.batches++
      done.removed += removed
      done.largestBatch = Math.max(done.largestBatch, removed)
      done.longestBatchMs = Math.max(done.longestBatchMs, performance.now() - started)
      if (removed < limit) break
      await pause()
    }
  }
  const removed = Object.fromEntries(report.rules.filter((r) => r.removed > 0).map((r) => [r.name.split(':')[0], r.removed]))
  if (Object.keys(removed).length > 0) deps.log.info({ removed }, 'retention: pruned expired rows')
  return report
}

/** Every RETENTION_EVERY_MS on this instance (app.ts starts it, and stops it on close). */
export function startRetention (deps: RetentionDeps): PeriodicJob {
  const schedule = { firstMs: FIRST_RUN_MS, everyMs: RETENTION_EVERY_MS, log: deps.log, failure: 'retention: pruning expired rows failed' }
  return startPeriodicJob(schedule, async (stopped) => await pruneExpiredRows(deps, { stopped }))
}
