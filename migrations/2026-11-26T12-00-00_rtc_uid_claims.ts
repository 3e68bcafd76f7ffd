// Frozen: never edit a migration that has shipped; add a new one.
// Video/voice uids (DECISIONS §16): within one channel a numeric uid belongs to the first user who got
// a token for it, until that token expires. One row per channel and uid, so of two users claiming it
// at once the primary key lets exactly one in; an expired claim is taken over in place.
import { sql, type Kysely } from 'kysely'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.createTable('rtc_uid_claims')
    .addColumn('channel_name', 'text', (c) => c.notNull())
    .addColumn('uid', 'bigint', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('expires_at', sql`timestamptz(3)`, (c) => c.notNull())
    .addPrimaryKeyConstraint('rtc_uid_claims_pkey', ['channel_name', 'uid'])
    .execute()
  // Account deletion's cascade finds a user's claims by this index.
  await db.schema.createIndex('rtc_uid_claims_user_id').on('rtc_uid_claims').column('user_id').execute()
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('rtc_uid_claims').execute()
}
