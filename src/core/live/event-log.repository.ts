// All SQL of the live event channel: the durable event log, its prune horizon, and NOTIFY.
import { sql } from 'kysely'
import type { Db } from '../../db/database.js'

export interface EventLogRow {
  id: string
  type: string
  payload: unknown
  audience: unknown
  userId: string | null
  createdAt: Date
}

// Any fixed 64-bit key; held by each append from before its id is drawn until its commit.
const APPEND_LOCK_KEY = 7_401_221_932

export interface NewEvent { type: string, payload: unknown, audience: unknown, userId: string | null }

/**
 * Appends events (in the given order) and notifies `channel` once with `e:<newest id>`, in one
 * statement — one implicit transaction: the notification goes out exactly when the rows commit,
 * never for a rolled-back one. The advisory lock is taken before ids are drawn and held to commit,
 * so ids commit in id order and notifications arrive in id order: "everything up to id N" is then a
 * meaningful position, and a listener that hears N loads every row up to N.
 */
export async function appendEvents (db: Db, channel: string, events: readonly NewEvent[]): Promise<void> {
  if (events.length === 0) return
  const rows = events.map((e, i) => sql`(${i}::int, ${e.type}::text, ${JSON.stringify(e.payload)}::jsonb, ${JSON.stringify(e.audience)}::jsonb, ${e.userId}::text)`)
  await sql`
    with locked as (select pg_advisory_xact_lock(${APPEND_LOCK_KEY}::bigint)),
    inserted as (
      insert into event_log (type, payload, audience, user_id)
      select v.type, v.payload, v.audience, v.user_id
      from locked, (values ${sql.join(rows)}) as v (ord, type, payload, audience, user_id)
      order by v.ord
      returning id
    )
    select pg_notify(${channel}, 'e:' || max(id)) from inserted`.execute(db)
}

function toRow (row: { id: string | number, type: string, payload: unknown, audience: unknown, user_id: string | null, created_at: Date }): EventLogRow {
  return { id: String(row.id), type: row.type, payload: row.payload, audience: row.audience, userId: row.user_id, createdAt: row.created_at }
}

/** Events with `after < id <= upTo`, oldest first, at most `limit`. */
export async function findEventsBetween (db: Db, after: string, upTo: string, limit: number): Promise<EventLogRow[]> {
  const rows = await db.selectFrom('event_log')
    .select(['id', 'type', 'payload', 'audience', 'user_id', 'created_at'])
    .where(sql<boolean>`id > ${after}::bigint and id <= ${upTo}::bigint`)
    .orderBy('id')
    .limit(limit)
    .execute()
  return rows.map(toRow)
}

/** How many events follow `after` (stops counting at `cap`). */
export async function countEventsAfter (db: Db, after: string, cap: number): Promise<number> {
  const result = await sql<{ n: number }>`
    select count(*)::int as n from (select 1 from event_log where id > ${after}::bigint limit ${cap}) capped`.execute(db)
  return result.rows[0]?.n ?? 0
}

/** The newest id ever appended as far as the log can tell, and the id up to which it was pruned. */
export async function logBounds (db: Db): Promise<{ newest: string, prunedThrough: string }> {
  const result = await sql<{ newest: string | number | null, pruned_through: string | number }>`
    select (select max(id) from event_log) as newest, pruned_through from event_log_horizon`.execute(db)
  const row = result.rows[0]
  const prunedThrough = String(row?.pruned_through ?? '0')
  const newest = row?.newest === null || row?.newest === undefined ? prunedThrough : String(row.newest)
  return { newest: BigInt(newest) > BigInt(prunedThrough) ? newest : prunedThrough, prunedThrough }
}

/**
 * Removes every event up to the newest one created before `cutoff` (a prefix by id, so the log is
 * always "everything after the horizon") and moves the horizon there.
 */
export async function pruneEventsBefore (db: Db, cutoff: Date): Promise<number> {
  return await db.transaction().execute(async (trx) => {
    const last = await sql<{ id: string | number | null }>`select max(id) as id from event_log where created_at < ${cutoff}`.execute(trx)
    const through = last.rows[0]?.id
    if (through === null || through === undefined) return 0
    const deleted = await sql`delete from event_log where id <= ${String(through)}::bigint`.execute(trx)
    await sql`update event_log_horizon set pruned_through = greatest(pruned_through, ${String(through)}::bigint)`.execute(trx)
    return Number(deleted.numAffectedRows ?? 0n)
  })
}

/** A bare notification (no log row): control signals and cursor batches. */
export async function notify (db: Db, channel: string, payload: string): Promise<void> {
  await sql`select pg_notify(${channel}, ${payload})`.execute(db)
}
