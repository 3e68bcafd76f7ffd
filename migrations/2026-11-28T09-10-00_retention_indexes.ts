// Frozen: never edit a migration that has shipped; add a new one.
// Retention (issue 38 item 9): rows that expire are pruned in short batches (src/core/retention/),
// each batch finding its rows by an index on the column that says they are past their retention,
// so a batch costs the rows it removes, never a scan of the table.
import { sql, type Kysely } from 'kysely'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('sessions_expires_at').on('sessions').column('expires_at').execute()
  await db.schema.createIndex('sessions_revoked_at').on('sessions').column('revoked_at').where(sql.ref('revoked_at'), 'is not', null).execute()
  await db.schema.createIndex('refresh_tokens_expires_at').on('refresh_tokens').column('expires_at').execute()
  await db.schema.createIndex('deletion_tokens_expires_at').on('deletion_tokens').column('expires_at').execute()
  await db.schema.createIndex('office_invites_expires_at').on('office_invites').column('expires_at').execute()
  await db.schema.createIndex('office_invite_sends_sent_at').on('office_invite_sends').column('sent_at').execute()
  await db.schema.createIndex('rtc_uid_claims_expires_at').on('rtc_uid_claims').column('expires_at').execute()
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down (db: Kysely<any>): Promise<void> {
  for (const index of ['sessions_expires_at', 'sessions_revoked_at', 'refresh_tokens_expires_at', 'deletion_tokens_expires_at', 'office_invites_expires_at', 'office_invite_sends_sent_at', 'rtc_uid_claims_expires_at']) {
    await db.schema.dropIndex(index).execute()
  }
}
