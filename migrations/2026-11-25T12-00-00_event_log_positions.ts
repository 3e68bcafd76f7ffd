// Frozen: never edit a migration that has shipped; add a new one.
// Events are written in the transaction of the change they describe (a transactional outbox), by
// many transactions at once, so the order of ids is not the order of commits. Each row records the
// transaction that wrote it; delivery follows (tx, id), which readers can make final: once every
// transaction older than a snapshot's xmin has ended, no row can appear before that point
// (src/live/event-log-bus.ts). The prune horizon becomes such a position too.
import { sql, type Kysely } from 'kysely'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up (db: Kysely<any>): Promise<void> {
  // Rows already in the log all get this migration's transaction: they keep their id order.
  await sql`alter table event_log add column tx xid8 not null default pg_current_xact_id()`.execute(db)
  await db.schema.createIndex('event_log_position').on('event_log').columns(['tx', 'id']).execute()
  // Every row at or before (pruned_tx, pruned_through) has been pruned.
  await sql`alter table event_log_horizon add column pruned_tx xid8 not null default '0'`.execute(db)
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down (db: Kysely<any>): Promise<void> {
  await sql`alter table event_log_horizon drop column pruned_tx`.execute(db)
  await db.schema.dropIndex('event_log_position').execute()
  await sql`alter table event_log drop column tx`.execute(db)
}
