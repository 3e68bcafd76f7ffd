import { sql } from 'kysely'
import type { Db } from '../../db/database.js'
import type { StoredAnswer } from './idempotency.types.js'

export interface KeyRef { userId: string, key: string }

/**
 * The statements below commit without waiting for their WAL flush (`synchronous_commit` off for
 * their own one-statement transaction): two more flushes per create would cost a third of its
 * throughput. It is safe: a claim is flushed with the create's own (synchronous) commit, which comes
 * after it in the WAL, so a create that survives a crash keeps its claim; a stored answer lost in a
 * crash leaves the key claimed, so a retry is told 409 until it expires — never a second create.
 */
const ASYNC_COMMIT = sql`(select set_config('synchronous_commit', 'off', true)) as async_commit`

/**
 * Claims a key: true when this request is the first (a new row, or an expired one taken over in
 * place); false when a live row holds the key. One statement, so of parallel retries the primary
 * key lets exactly one claim it.
 */
export async function claimKey (db: Db, ref: KeyRef, claim: { fingerprint: string, now: Date, expiresAt: Date }): Promise<boolean> {
  const result = await sql<{ idem_key: string }>`
    insert into idempotency_keys (user_id, idem_key, fingerprint, status, headers, body, created_at, expires_at)
    select ${ref.userId}, ${ref.key}, ${claim.fingerprint}, null, null, null, ${claim.now}, ${claim.expiresAt} from ${ASYNC_COMMIT}
    on conflict (user_id, idem_key) do update
      set fingerprint = excluded.fingerprint, status = null, headers = null, body = null, created_at = excluded.created_at, expires_at = excluded.expires_at
      where idempotency_keys.expires_at <= ${claim.now}
    returning idem_key`.execute(db)
  return result.rows.length > 0
}

export interface KeyRow { fingerprint: string, answer: StoredAnswer | null }

export async function findKey (db: Db, ref: KeyRef): Promise<KeyRow | undefined> {
  const row = await db.selectFrom('idempotency_keys')
    .select(['fingerprint', 'status', 'headers', 'body'])
    .where('user_id', '=', ref.userId).where('idem_key', '=', ref.key)
    .executeTakeFirst()
  if (row === undefined) return undefined
  const answer = row.status === null ? null : { status: row.status, headers: row.headers ?? {}, body: row.body ?? '' }
  return { fingerprint: row.fingerprint, answer }
}

export async function storeAnswer (db: Db, ref: KeyRef, answer: StoredAnswer): Promise<void> {
  await sql`
    update idempotency_keys set status = ${answer.status}, headers = ${JSON.stringify(answer.headers)}::jsonb, body = ${answer.body}
    from ${ASYNC_COMMIT}
    where user_id = ${ref.userId} and idem_key = ${ref.key}`.execute(db)
}

/** Frees a key whose first run failed on our side (5xx), so a retry runs it again. */
export async function releaseKey (db: Db, ref: KeyRef): Promise<void> {
  await db.deleteFrom('idempotency_keys')
    .where('user_id', '=', ref.userId).where('idem_key', '=', ref.key).where('status', 'is', null)
    .execute()
}

/** Deletes up to `limit` expired keys, oldest first; returns how many. */
export async function pruneExpiredKeys (db: Db, now: Date, limit: number): Promise<number> {
  const result = await sql<{ user_id: string }>`
    delete from idempotency_keys where (user_id, idem_key) in (
      select user_id, idem_key from idempotency_keys where expires_at <= ${now} order by expires_at limit ${limit}
    ) returning user_id`.execute(db)
  return result.rows.length
}
