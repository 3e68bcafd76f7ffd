// The writing side of the event log (the transactional outbox): events go in with the change they
// describe, in its transaction. Reading, delivery and pruning are the live delivery's (src/live).
import { sql, type RawBuilder } from 'kysely'
import type { Db } from '../db/database.js'

export interface NewEvent { type: string, payload: unknown, audience: unknown, userId: string | null }

/** One statement for all of a transaction's events; their ids follow the given order. */
export async function insertEvents (trx: Db, events: readonly NewEvent[]): Promise<void> {
  if (events.length === 0) return
  const rows = events.map((e, i) => sql`(${i}::int, ${e.type}::text, ${JSON.stringify(e.payload)}::jsonb, ${JSON.stringify(e.audience)}::jsonb, ${e.userId}::text)`)
  await sql`
    insert into event_log (type, payload, audience, user_id)
    select v.type, v.payload, v.audience, v.user_id
    from (values ${sql.join(rows)}) as v (ord, type, payload, audience, user_id)
    order by v.ord`.execute(trx)
}

/**
 * The INSERT of one event whose payload gains the `version` of the one row that `source` (a
 * data-modifying CTE of the caller's statement) returns: a change and its event, version included,
 * written by one statement, so a hot row's lock is held for that one round trip and the commit.
 */
export function insertEventWithVersionOf (event: NewEvent, source: string): RawBuilder<unknown> {
  return sql`insert into event_log (type, payload, audience, user_id)
    select ${event.type}::text, ${JSON.stringify(event.payload)}::jsonb || jsonb_build_object('version', changed.version),
      ${JSON.stringify(event.audience)}::jsonb, ${event.userId}::text
    from ${sql.table(source)} as changed`
}
