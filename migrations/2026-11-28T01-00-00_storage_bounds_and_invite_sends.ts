// Frozen: never edit a migration that has shipped; add a new one.
// Storage bounds and invite mail (DECISIONS §16):
// - `users.upload_bytes`: what the user's uploads weigh, kept by the same transaction that adds or
//   removes an upload, so an upload's quota check (UPLOAD_QUOTA_BYTES) is one conditional update of
//   the user's row: parallel uploads near the quota queue on that row and cannot both pass.
// - `office_invite_sends`: one row per invitation mailed, kept a day, so one address gets at most 3
//   invitations a day from one office however often a pending one is replaced.
// - `maintenance_runs`: when a periodic job last started (the sweep of upload bytes no row refers
//   to), so one instance of many runs it, once per period.
import { sql, type Kysely } from 'kysely'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('users').addColumn('upload_bytes', 'bigint', (c) => c.notNull().defaultTo(0)).execute()
  await sql`update users set upload_bytes = totals.bytes
    from (select owner_id, sum(size)::bigint as bytes from uploads group by owner_id) totals
    where users.id = totals.owner_id`.execute(db)

  await db.schema.createTable('office_invite_sends')
    .addColumn('office_id', 'text', (c) => c.notNull().references('offices.id').onDelete('cascade'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('sent_at', sql`timestamptz(3)`, (c) => c.notNull())
    .execute()
  await db.schema.createIndex('office_invite_sends_office_email').on('office_invite_sends').columns(['office_id', 'email', 'sent_at']).execute()

  await db.schema.createTable('maintenance_runs')
    .addColumn('job', 'text', (c) => c.primaryKey())
    .addColumn('started_at', sql`timestamptz(3)`, (c) => c.notNull())
    .execute()
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('maintenance_runs').execute()
  await db.schema.dropTable('office_invite_sends').execute()
  await db.schema.alterTable('users').dropColumn('upload_bytes').execute()
}
