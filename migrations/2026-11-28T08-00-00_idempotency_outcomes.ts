// Frozen: never edit a migration that has shipped; add a new one.
// Idempotency covers every create, admin ones included, and keeps what the operation returned
// (issue 38 item 4, DECISIONS §17). `user_id` now names the key's owner: a user's id, or
// `admin:<sub>` for an administrator (who is no row of `users`), so its foreign key moves to
// `account_id` (the user's id, null for an administrator; a deleted account still takes its keys
// along). `outcome` is what the first run returned — `{ "value": … }` or `{ "error": … }`, null while
// it runs — which each transport answers again as it answered the first time; the stored HTTP or RPC
// answer (`status`, `headers`, `body`) goes. Keys of the old form are forgotten: their fingerprints
// were computed another way, so a retry sent across the upgrade runs as a new request.
import { type Kysely } from 'kysely'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up (db: Kysely<any>): Promise<void> {
  await db.deleteFrom('idempotency_keys').execute()
  await db.schema.alterTable('idempotency_keys').dropConstraint('idempotency_keys_user_id_fkey').execute()
  await db.schema.alterTable('idempotency_keys').addColumn('account_id', 'text', (c) => c.references('users.id').onDelete('cascade')).execute()
  // json, not jsonb: a value comes back with its keys in their order, so a replayed body is the same text.
  await db.schema.alterTable('idempotency_keys').addColumn('outcome', 'json').execute()
  await db.schema.alterTable('idempotency_keys').dropColumn('status').execute()
  await db.schema.alterTable('idempotency_keys').dropColumn('headers').execute()
  await db.schema.alterTable('idempotency_keys').dropColumn('body').execute()
  // Account deletion finds a user's keys by this index.
  await db.schema.createIndex('idempotency_keys_account_id').on('idempotency_keys').column('account_id').execute()
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down (db: Kysely<any>): Promise<void> {
  await db.deleteFrom('idempotency_keys').execute()
  await db.schema.dropIndex('idempotency_keys_account_id').execute()
  await db.schema.alterTable('idempotency_keys').dropColumn('outcome').execute()
  await db.schema.alterTable('idempotency_keys').dropColumn('account_id').execute()
  await db.schema.alterTable('idempotency_keys').addColumn('status', 'integer').execute()
  await db.schema.alterTable('idempotency_keys').addColumn('headers', 'jsonb').execute()
  await db.schema.alterTable('idempotency_keys').addColumn('body', 'text').execute()
  await db.schema.alterTable('idempotency_keys').addForeignKeyConstraint('idempotency_keys_user_id_fkey', ['user_id'], 'users', ['id']).onDelete('cascade').execute()
}
