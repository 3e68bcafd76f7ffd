// Frozen: never edit a migration that has shipped; add a new one.
// Idempotency-Key (issue 33, DECISIONS §15): the first answer to a create, kept per user and key for
// 24 hours and replayed to retries. The primary key admits one claim of a key, so of parallel
// retries exactly one runs the create; the others read the row (in flight: `status` null).
import { sql, type Kysely } from 'kysely'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.createTable('idempotency_keys')
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('idem_key', 'text', (c) => c.notNull())
    // sha256 of the transport, the route or method, and the request body.
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('status', 'integer')
    .addColumn('headers', 'jsonb')
    .addColumn('body', 'text')
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull())
    .addColumn('expires_at', sql`timestamptz(3)`, (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pkey', ['user_id', 'idem_key'])
    .execute()
  // The prune deletes expired rows oldest first by this index.
  await db.schema.createIndex('idempotency_keys_expires_at').on('idempotency_keys').column('expires_at').execute()
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('idempotency_keys').execute()
}
