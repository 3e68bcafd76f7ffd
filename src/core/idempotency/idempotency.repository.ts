import { sql } from 'kysely'
import type { Db } from '../../db/database.js'
import type { StoredOutcome } from '../../db/schema.js'
import type { KeyOwner } from './idempotency.types.js'

export interface KeyRef { owner: KeyOwner, key: string }

/**
 * The statements below that run alone commit without waiting for their WAL flush
 * (`synchronous_commit` off for their own one-statement transaction). It is safe: a claim is flushed
 * with the create's own (synchronous) commit, which comes after it in the WAL, so a create that
 * survives a crash keeps its claim; an outcome lost in a crash leaves the key claimed, so a retry is
 * told 409 until it expires — never a second create. Outcomes stored in the create's own transaction
 * commit with it.
 */
const ASYNC_COMMIT = sql`(select set_config('synchronous_commit', 'off', true)) as async_commit`

export interface Claim { fingerprint: string, now: Date, expiresAt: Date }

/**
 * Claims a key before its request is run: true when this request is the first (a new row, or an
 * expired one taken over in place); false when a live row holds the key. One statement, so of
 * parallel retries the primary key lets exactly one claim it. `fingerprint` is '' when the request's
 * body has not arrived yet (its outcome sets it).
 */
export async function claimKey (db: Db, ref: KeyRef, claim: Claim): Promise<boolean> {
  const result = await sql<{ idem_key: string }>`
    insert into idempotency_keys (user_id, idem_key, fingerprint, account_id, outcome, created_at, expires_at)
    select ${ref.owner.id}, ${ref.key}, ${claim.fingerprint}, ${ref.owner.accountId}, null, ${claim.now}, ${claim.expiresAt} from ${ASYNC_COMMIT}
    on conflict (user_id, idem_key) do update
      set fingerprint = excluded.fingerprint, account_id = excluded.account_id, outcome = null, created_at = excluded.created_at, expires_at = excluded.expires_at
      where idempotency_keys.expires_at <= ${claim.now}
    returning idem_key`.execute(db)
  return result.rows.length > 0
}

/**
 * Claims a key and stores its outcome at once, as the last statement of the operation's own
 * transaction (`trx`): false when a live row holds the key — if another transaction is inserting it,
 * after that one ended. The caller then rolls its transaction back.
 */
export async function insertOutcome (trx: Db, ref: KeyRef, claim: Claim, outcome: StoredOutcome): Promise<boolean> {
  const result = await sql<{ idem_key: string }>`
    insert into idempotency_keys (user_id, idem_key, fingerprint, account_id, outcome, created_at, expires_at)
    values (${ref.owner.id}, ${ref.key}, ${claim.fingerprint}, ${ref.owner.accountId}, ${JSON.stringify(outcome)}::json, ${claim.now}, ${claim.expiresAt})
    on conflict (user_id, idem_key) do update
      set fingerprint = excluded.fingerprint, account_id = excluded.account_id, outcome = excluded.outcome, created_at = excluded.created_at, expires_at = excluded.expires_at
      where idempotency_keys.expires_at <= ${claim.now}
    returning idem_key`.execute(trx)
  return result.rows.length > 0
}

/** Stores the outcome of the run that claimed the key at `claimedAt` (in its transaction, or alone). */
export async function updateOutcome (db: Db, ref: KeyRef, claimedAt: Date, fingerprint: string, outcome: StoredOutcome, alone: boolean): Promise<void> {
  await sql`
    update idempotency_keys set fingerprint = ${fingerprint}, outcome = ${JSON.stringify(outcome)}::json
    ${alone ? sql`from ${ASYNC_COMMIT}` : sql``}
    where user_id = ${ref.owner.id} and idem_key = ${ref.key} and created_at = ${claimedAt}`.execute(db)
}

export interface KeyRow { fingerprint: string, outcome: StoredOutcome | null }

export async function findKey (db: Db, ref: KeyRef, now: Date): Promise<KeyRow | undefined> {
  return await db.selectFrom('idempotency_keys')
    .select(['fingerprint', 'outcome'])
    .where('user_id', '=', ref.owner.id).where('idem_key', '=', ref.key).where('expires_at', '>', now)
    .executeTakeFirst()
}

/** Frees a key whose run ended without an outcome to keep (a 5xx, a body that never arrived), so a retry runs it. */
export async function releaseKey (db: Db, ref: KeyRef, claimedAt: Date): Promise<void> {
  await db.deleteFrom('idempotency_keys')
    .where('user_id', '=', ref.owner.id).where('idem_key', '=', ref.key).where('created_at', '=', claimedAt).where('outcome', 'is', null)
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
