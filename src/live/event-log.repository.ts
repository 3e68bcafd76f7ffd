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
 * Final events after `after`, in delivery order, at most `limit`; `waiting`, the first event after
 * them that is not final yet (the caller looks again shortly, and measures how long it waits). Every
 * event that is not final sorts after every final one, so only the final ones are read, and the
 * first held-back one merely noticed.
 */
export async function findFinalEventsAfter (db: Db, after: LogPosition, limit: number): Promise<{ rows: EventLogRow[], waiting: LogPosition | undefined }> {
  const result = await sql<RawRow & { waiting_tx: string | null, waiting_id: string | null }>`
    with horizon as materialized (select pg_snapshot_xmin(pg_current_snapshot()) as xmin),
    final as (
      select event_log.tx, event_log.id, type, payload, audience, user_id, created_at
      from event_log, horizon
      where (event_log.tx, event_log.id) > ${at(after)} and event_log.tx < horizon.xmin
      order by event_log.tx, event_log.id
      limit ${limit}
    ),
    -- The first event after the position that is not final: one row of an index scan from the later
    -- of the position and the horizon (an EXISTS over "tx >= xmin" was planned as a sequential scan).
    waiting as (
      select event_log.tx, event_log.id from event_log, horizon
      where (event_log.tx, event_log.id) > (
        greatest(${after.tx.toString()}::xid8, horizon.xmin),
        case when ${after.tx.toString()}::xid8 >= horizon.xmin then ${after.id.toString()}::bigint else -1 end)
      order by event_log.tx, event_log.id
      limit 1
    )
    select final.tx::text, final.id::text, type, payload, audience, user_id, created_at,
      (select waiting.tx::text from waiting) as waiting_tx, (select waiting.id::text from waiting) as waiting_id
    from (select 1) as one left join final on true
    order by final.tx, final.id`.execute(db)
  const rows = result.rows.filter((row) => row.tx !== null).map(toRow)
  const first = result.rows[0]
  const waiting = first?.waiting_tx === null || first?.waiting_tx === undefined || first.waiting_id === null
    ? undefined
    : { tx: BigInt(first.waiting_tx), id: BigInt(first.waiting_id) }
  return { rows, waiting }
}

/**
 * A page of the events with `after < position <= upTo` (all final when `upTo` is), in delivery
 * order: at most `limit` events, and no more than `maxBytes` of payload text except that a page
 * always holds its first event (so one large event is still read, alone). `bytes`: the page's
 * payload text; `more`: the page was cut by either bound (the next page starts after `last`, its
 * last row). `prunedThrough`: the prune horizon, so a reader that is behind it learns its events are
 * gone. Postgres sizes every row it scans (up to `limit`), but only the page leaves the database: a
 * reader of large events asks for fewer.
 */
export async function findEventPage (db: Db, after: LogPosition, upTo: LogPosition, limit: number, maxBytes: number): Promise<{ rows: EventLogRow[], bytes: number, more: boolean, last: LogPosition | undefined, prunedThrough: LogPosition }> {
  const result = await sql<RawRow & { bytes: string, through: string, pruned_tx: string, pruned_through: string }>`
    with scanned as (
      select event_log.tx, event_log.id, type, payload, audience, user_id, created_at, octet_length(payload::text) as bytes
      from event_log
      where (event_log.tx, event_log.id) > ${at(after)} and (event_log.tx, event_log.id) <= ${at(upTo)}
      order by event_log.tx, event_log.id
      limit ${limit}
    ),
    sized as (select scanned.*, sum(bytes) over (order by scanned.tx, scanned.id) as through from scanned)
    select sized.tx::text, sized.id::text, type, payload, audience, user_id, created_at, bytes::text, through::text,
      h.pruned_tx::text, h.pruned_through::text
    from event_log_horizon h left join sized on sized.through - sized.bytes < ${maxBytes}
    order by sized.tx, sized.id`.execute(db)
  const first = result.rows[0]
  const prunedThrough = { tx: BigInt(first?.pruned_tx ?? '0'), id: BigInt(first?.pruned_through ?? '0') }
  const found = result.rows.filter((row) => row.tx !== null)
  const last = found[found.length - 1]
  const bytes = last === undefined ? 0 : Number(last.through)
  const more = found.length === limit || bytes >= maxBytes
  const rows = found.map(toRow)
  return { rows, bytes, more, last: rows[rows.length - 1]?.position, prunedThrough }
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

/** Arbitrary, fixed: keeps the pruning lock apart from any other advisory lock (sparks use 0x5350). */
const PRUNE_LOCK_CLASS = 0x4556 // "EV"

/**
 * One batch of pruning, in a short transaction of its own: removes the oldest events (a prefix in
 * delivery order, so the log is always "everything after the horizon"), at most `limit`, stopping at
 * the first one that is not final or not older than `cutoff`, and moves the horizon past them.
 * Undefined when another session holds the pruning lock (another instance is pruning): nobody waits
 * for it, so no transaction of ours sits on a lock while it holds delivery back.
 */
export async function pruneBatch (db: Db, cutoff: Date, limit: number): Promise<number | undefined> {
  return await db.transaction().execute(async (trx) => {
    const lock = await sql<{ locked: boolean }>`select pg_try_advisory_xact_lock(${PRUNE_LOCK_CLASS}::int, 1) as locked`.execute(trx)
    if (lock.rows[0]?.locked !== true) return undefined
    const result = await sql<{ deleted: number }>`
      with horizon as materialized (select pg_snapshot_xmin(pg_current_snapshot()) as xmin),
      head as materialized (
        select event_log.tx, event_log.id, event_log.tx < horizon.xmin and event_log.created_at < ${cutoff} as old
        from event_log, horizon order by event_log.tx, event_log.id limit ${limit}
      ),
      boundary as (select tx, id from head where not old order by tx, id limit 1),
      doomed as (select head.tx, head.id from head where old and not exists (select 1 from boundary where (head.tx, head.id) > (boundary.tx, boundary.id))),
      deleted as (delete from event_log using doomed where event_log.tx = doomed.tx and event_log.id = doomed.id returning event_log.tx, event_log.id),
      last as (select tx, id from deleted order by tx desc, id desc limit 1),
      moved as (update event_log_horizon set pruned_tx = last.tx, pruned_through = last.id from last
        where (event_log_horizon.pruned_tx, event_log_horizon.pruned_through) < (last.tx, last.id) returning 1)
      select (select count(*) from deleted)::int as deleted, (select count(*) from moved)::int as moved`.execute(trx)
    return result.rows[0]?.deleted ?? 0
  })
}

/** The open transaction that holds delivery back, as `pg_stat_activity` shows it (what we may see of it). */
export interface Blocker {
  pid: number
  applicationName: string
  database: string | null
  user: string | null
  state: string | null
  /** How long its transaction has been open (ms). */
  transactionMs: number | null
  /** Its current or last statement, when this role may see it. */
  query: string | null
}

/**
 * The session whose transaction is the oldest still running on the cluster: the one that holds the
 * snapshot's xmin, so every event written after it began waits for it (any database of the cluster,
 * since transaction ids are the cluster's). Undefined when no session has one (a prepared transaction).
 */
export async function findBlocker (db: Db): Promise<Blocker | undefined> {
  const result = await sql<{ pid: number, application_name: string, datname: string | null, usename: string | null, state: string | null, transaction_ms: number | null, query: string | null }>`
    select pid, application_name, datname, usename, state,
      (extract(epoch from clock_timestamp() - xact_start) * 1000)::float8 as transaction_ms, query
    from pg_stat_activity
    where backend_xid is not null and pid <> pg_backend_pid()
    order by age(backend_xid) desc limit 1`.execute(db)
  const row = result.rows[0]
  if (row === undefined) return undefined
  const visible = row.query !== null && row.query !== '' && row.query !== '<insufficient privilege>'
  return {
    pid: row.pid,
    applicationName: row.application_name,
    database: row.datname,
    user: row.usename,
    state: row.state,
    transactionMs: row.transaction_ms === null ? null : Math.round(row.transaction_ms),
    query: visible ? row.query : null
  }
}

/** A bare notification (no log row): wake-ups, control signals and cursor batches. */
export async function notify (db: Db, channel: string, payload: string): Promise<void> {
  await sql`select pg_notify(${channel}, ${payload})`.execute(db)
}
