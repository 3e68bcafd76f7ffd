// Frozen: never edit a migration that has shipped; add a new one.
// The administration audit log (DECISIONS §12): one row per admin action and per refused attempt of a
// verified token without the role. Append-only by the database itself: a trigger refuses every UPDATE,
// DELETE and TRUNCATE, whoever runs it (the service's own role included), so no code path and no
// stray statement can rewrite history. No foreign keys: an actor is the provider's `sub`, and a row
// outlives whatever it names (a deleted room, a deleted account).
import { sql, type Kysely } from 'kysely'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.createTable('admin_audit_log')
    .addColumn('id', 'text', (c) => c.primaryKey())
    // Insertion order: ties of `at` (one millisecond) still list newest first.
    .addColumn('seq', 'bigint', (c) => c.notNull().generatedAlwaysAsIdentity())
    .addColumn('at', sql`timestamptz(3)`, (c) => c.notNull())
    .addColumn('actor_sub', 'text', (c) => c.notNull())
    .addColumn('actor_email', 'text')
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('target_type', 'text')
    .addColumn('target_id', 'text')
    .addColumn('outcome', 'text', (c) => c.notNull().check(sql`outcome in ('permitted', 'denied')`))
    .addColumn('details', 'jsonb', (c) => c.notNull())
    .addColumn('request_id', 'text', (c) => c.notNull())
    .addColumn('client_ip', 'text', (c) => c.notNull())
    .execute()
  // The list's filters, each newest first.
  await db.schema.createIndex('admin_audit_log_seq').on('admin_audit_log').column('seq desc').execute()
  await db.schema.createIndex('admin_audit_log_actor').on('admin_audit_log').columns(['actor_sub', 'seq desc']).execute()
  await db.schema.createIndex('admin_audit_log_action').on('admin_audit_log').columns(['action', 'seq desc']).execute()
  await db.schema.createIndex('admin_audit_log_target').on('admin_audit_log').columns(['target_id', 'seq desc']).execute()

  await sql`
    create function admin_audit_log_refuse_change() returns trigger language plpgsql as $$
    begin
      raise exception 'admin_audit_log is append-only: % refused', tg_op using errcode = 'insufficient_privilege';
    end
    $$`.execute(db)
  await sql`create trigger admin_audit_log_no_update_or_delete before update or delete on admin_audit_log
    for each row execute function admin_audit_log_refuse_change()`.execute(db)
  await sql`create trigger admin_audit_log_no_truncate before truncate on admin_audit_log
    for each statement execute function admin_audit_log_refuse_change()`.execute(db)
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('admin_audit_log').execute()
  await sql`drop function admin_audit_log_refuse_change()`.execute(db)
}
