// The reading side of the event log (its writing side is the core's, src/core/event-log.repository.ts):
// loading what delivery has not handed on yet, replay ranges, the prune horizon, and NOTIFY.
//
// Many transactions write events at once and commit in any order, so an id is not a place in the
// delivery order. A position (tx, id) is, once it is final: a row is final when its transaction is
// older than the reading statement's snapshot xmin, because every transaction older than that xmin
// has ended and no row can still appear before it. Rows past the first one that is not final are
// held back until they are (one more look a moment later; see event-log-bus.ts).
import { sql, type RawBuilder } from 'kysely'
import type { Db } from '../db/database.js'
import type { LogPosition } from './log-position.js'

export interface EventLogRow {
  position: LogPosition
  type: string
  payload: unknown
  audience: unknown
  userId: string | null
  createdAt: Date
}

interface RawRow { tx: string, id: string, type: string, payload: unknown, audience: unknown, user_id: string | null, created_at: Date }

function toRow (row: RawRow): EventLogRow {
  return { position: { tx: BigInt(row.tx), id: BigInt(row.id) }, type: row.type, payload: row.payload, audience: row.audience, userId: row.user_id, createdAt: row.created_at }
}

const at = (position: LogPosition): RawBuilder<unknown> => sql`(${position.tx.toString()}::xid8, ${position.id.toString()}::bigint)`

// Every ORDER BY names the table's columns: a bare `tx` would mean the output column `tx::text`
// and sort positions as text (out of order past a power of ten, and without the index).

/**
 * Final events after `after`, in delivery order, at most `limit`; `heldBack` when an event that is
 * not final yet follows them (the caller looks again shortly). Every event that is not final sorts
 * after every final one, so only the final ones are read, and the held-back ones merely noticed.
 */
export async function findFinalEventsAfter (db: Db, after: LogPosition, limit: number): Promise<{ rows: EventLogRow[], heldBack: boolean }> {
  const result = await sql<RawRow & { held_back: boolean }>`
    with horizon as materialized (select pg_snapshot_xmin(pg_current_snapshot()) as xmin),
    final as (
      select event_log.tx, event_log.id, type, payload, audience, user_id, created_at
      from event_log, horizon
      where (event_log.tx, event_log.id) > ${at(after)} and event_log.tx < horizon.xmin
      order by event_log.tx, event_log.id
      limit ${limit}
    )
    select final.tx::text, final.id::text, type, payload, audience, user_id, created_at,
      -- Some event after the position is held back exactly when the newest one is: one row of a backward
      -- index scan (an EXISTS over "tx >= xmin" was planned as a sequential scan of the whole log).
      coalesce((select newest.tx >= horizon.xmin from horizon, (
        select event_log.tx from event_log where (event_log.tx, event_log.id) > ${at(after)}
        order by event_log.tx desc, event_log.id desc limit 1) as newest), false) as held_back
    from (select 1) as one left join final on true
    order by final.tx, final.id`.execute(db)
  const rows = result.rows.filter((row) => row.tx !== null).map(toRow)
  return { rows, heldBack: result.rows[0]?.held_back ?? false }
}

/** Events with `after < position <= upTo` (all final when `upTo` is), in delivery order, at most `limit`. */
export async function findEventsBetween (db: Db, after: LogPosition, upTo: LogPosition, limit: number): Promise<EventLogRow[]> {
  const result = await sql<RawRow>`
    select tx::text, id::text, type, payload, audience, user_id, created_at
    from event_log
    where (tx, id) > ${at(after)} and (tx, id) <= ${at(upTo)}
    order by event_log.tx, event_log.id
    limit ${limit}`.execute(db)
  return result.rows.map(toRow)
}

/** How many events follow `after` (stops counting at `cap`). */
export async function countEventsAfter (db: Db, after: LogPosition, cap: number): Promise<number> {
  const result = await sql<{ n: number }>`
    select count(*)::int as n from (select 1 from event_log where (tx, id) > ${at(after)} limit ${cap}) capped`.execute(db)
  return result.rows[0]?.n ?? 0
}

/** The newest final position in the log (the horizon when the log is empty) and the prune horizon. */
export async function logBounds (db: Db): Promise<{ newest: LogPosition, prunedThrough: LogPosition }> {
  const result = await sql<{ tx: string | null, id: string | null, pruned_tx: string, pruned_through: string }>`
    with horizon as materialized (select pg_snapshot_xmin(pg_current_snapshot()) as xmin),
    newest as (
      select tx, id from event_log, horizon where event_log.tx < horizon.xmin order by event_log.tx desc, event_log.id desc limit 1
    )
    select newest.tx::text, newest.id::text, h.pruned_tx::text, h.pruned_through::text
    from event_log_horizon h left join newest on true`.execute(db)
  const row = result.rows[0]
  const prunedThrough = { tx: BigInt(row?.pruned_tx ?? '0'), id: BigInt(row?.pruned_through ?? '0') }
  const newest = row?.tx === null || row?.tx === undefined || row.id === null ? prunedThrough : { tx: BigInt(row.tx), id: BigInt(row.id) }
  return { newest, prunedThrough }
}

/**
 * Removes every final event up to the newest final one created before `cutoff` (a prefix in
 * delivery order, so the log is always "everything after the horizon") and moves the horizon there.
 */
export async function pruneEventsBefore (db: Db, cutoff: Date): Promise<number> {
  return await db.transaction().execute(async (trx) => {
    const last = await sql<{ tx: string, id: string }>`
      with horizon as materialized (select pg_snapshot_xmin(pg_current_snapshot()) as xmin)
      select tx::text, id::text from event_log, horizon
      where created_at < ${cutoff} and event_log.tx < horizon.xmin
      order by event_log.tx desc, event_log.id desc limit 1`.execute(trx)
    const through = last.rows[0]
    if (through === undefined) return 0
    const position = { tx: BigInt(through.tx), id: BigInt(through.id) }
    const deleted = await sql`delete from event_log where (tx, id) <= ${at(position)}`.execute(trx)
    await sql`update event_log_horizon set pruned_tx = ${through.tx}::xid8, pruned_through = ${through.id}::bigint
      where (pruned_tx, pruned_through) < ${at(position)}`.execute(trx)
    return Number(deleted.numAffectedRows ?? 0n)
  })
}

/** A bare notification (no log row): wake-ups, control signals and cursor batches. */
export async function notify (db: Db, channel: string, payload: string): Promise<void> {
  await sql`select pg_notify(${channel}, ${payload})`.execute(db)
}
