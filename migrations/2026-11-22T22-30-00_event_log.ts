// Frozen: never edit a migration that has shipped; add a new one.
// The durable event log behind the live stream: every published event gets a row whose id is the
// SSE `id`, so a reconnecting client can be replayed what it missed (src/core/live).
import { sql, type Kysely } from 'kysely'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.createTable('event_log')
    .addColumn('id', 'bigint', (c) => c.generatedAlwaysAsIdentity().primaryKey())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('payload', 'jsonb', (c) => c.notNull())
    .addColumn('audience', 'jsonb', (c) => c.notNull())
    // No foreign key: the log outlives the users it mentions until it is pruned.
    .addColumn('user_id', 'text')
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema.createIndex('event_log_created_at').on('event_log').column('created_at').execute()

  // One row: every id up to `pruned_through` has been pruned, so a Last-Event-ID below it cannot be replayed.
  await db.schema.createTable('event_log_horizon')
    .addColumn('singleton', 'boolean', (c) => c.primaryKey().defaultTo(true).check(sql`singleton`))
    .addColumn('pruned_through', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute()
  await sql`insert into event_log_horizon (singleton, pruned_through) values (true, 0)`.execute(db)
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('event_log_horizon').execute()
  await db.schema.dropTable('event_log').execute()
}
