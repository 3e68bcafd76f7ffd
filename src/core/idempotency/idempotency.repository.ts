import { sql } from 'kysely'
import type { Db } from '../../db/database.js'
import type { StoredAnswer } from './idempotency.types.js'

export interface KeyRef { userId: string, key: string }

/**
 * Claims a key: true when this request is the first (a new row, or an expired one taken over in
 * place); false when a live row holds the key. One statement, so of parallel retries the primary
 * key lets exactly one claim it.
 */
export async function claimKey (db: Db, ref: KeyRef, claim: { fingerprint: string, now: Date, expiresAt: Date }): Promise<boolean> {
  const row = await db.insertInto('idempotency_keys')
    .values({ user_id: ref.userId, idem_key: ref.key, fingerprint: claim.fingerprint, status: null, headers: null, body: null, created_at: claim.now, expires_at: claim.expiresAt })
    .onConflict((oc) => oc.columns(['user_id', 'idem_key'])
      .doUpdateSet({ fingerprint: claim.fingerprint, status: null, headers: null, body: null, created_at: claim.now, expires_at: claim.expiresAt })
      .where('idempotency_keys.expires_at', '<=', claim.now))
    .returning('idem_key')
    .executeTakeFirst()
  return row !== undefined
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
  await db.updateTable('idempotency_keys')
    .set({ status: answer.status, headers: JSON.stringify(answer.headers), body: answer.body })
    .where('user_id', '=', ref.userId).where('idem_key', '=', ref.key)
    .execute()
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
