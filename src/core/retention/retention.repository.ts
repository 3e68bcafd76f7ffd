// All SQL of retention (issue 38 items 4 and 9): which rows of each growing table are past their
// retention, and one batch of them deleted in a transaction of its own under a try-advisory-lock,
// so one instance prunes at a time and no batch ever waits on another's lock.
import { sql, type RawBuilder } from 'kysely'
import type { Db } from '../../db/database.js'
import type { Database } from '../../db/schema.js'

/** Arbitrary, fixed: apart from the event log's (0x4556) and the upload sweep's (0x5550). */
export const RETENTION_LOCK_CLASS = 0x5245 // "RE"

/** Deletes up to `limit` rows of `table` matching `expired`, found by the index on its predicate;
 *  by `ctid`, so one statement serves every table whatever its key. Answers how many went. */
export async function deleteExpired (db: Db, table: keyof Database, expired: RawBuilder<boolean>, limit: number): Promise<number> {
  const result = await sql`
    delete from ${sql.table(table)} where ctid = any(array(
      select ctid from ${sql.table(table)} where ${expired} limit ${limit}
    ))`.execute(db)
  return Number(result.numAffectedRows ?? 0n)
}

/**
 * Runs one batch in a short transaction of its own, if no other instance holds retention's lock
 * (undefined then: that instance is pruning). The lock is transaction-scoped, so it never outlives
 * the batch, a pooler in transaction mode keeps it correct, and a crash releases it.
 */
export async function inRetentionBatch (db: Db, batch: (trx: Db) => Promise<number>): Promise<number | undefined> {
  return await db.transaction().execute(async (trx) => {
    const lock = await sql<{ locked: boolean }>`select pg_try_advisory_xact_lock(${RETENTION_LOCK_CLASS}::int, 1) as locked`.execute(trx)
    if (lock.rows[0]?.locked !== true) return undefined
    return await batch(trx)
  })
}
