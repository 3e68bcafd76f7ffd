// The writing side of the event log (the transactional outbox): events go in with the change they
// describe, in its transaction. Reading, delivery and pruning are the live delivery's (src/live).
import { sql } from 'kysely'
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
