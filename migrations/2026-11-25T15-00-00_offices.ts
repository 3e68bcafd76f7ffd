// Frozen: never edit a migration that has shipped; add a new one.
// Offices, their members with roles, and e-mail invitations (DECISIONS §5, §13).
import { sql, type Kysely } from 'kysely'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.createTable('offices')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('slug', 'text', (c) => c.notNull().unique())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('is_public', 'boolean', (c) => c.notNull().defaultTo(false))
    // No foreign key: an office outlives its creator when other owners remain.
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  // The public listing pages through public offices newest first.
  await db.schema.createIndex('offices_public_created_at').on('offices').columns(['created_at', 'id']).where(sql.ref('is_public'), '=', true).execute()

  await db.schema.createTable('office_members')
    .addColumn('office_id', 'text', (c) => c.notNull().references('offices.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('role', 'text', (c) => c.notNull().check(sql`role in ('owner', 'admin', 'member')`))
    .addColumn('joined_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    // One membership per user and office, whatever races to create it.
    .addPrimaryKeyConstraint('office_members_pkey', ['office_id', 'user_id'])
    .execute()
  await db.schema.createIndex('office_members_user_id').on('office_members').column('user_id').execute()
  // Members are listed in the order they joined.
  await db.schema.createIndex('office_members_joined').on('office_members').columns(['office_id', 'joined_at', 'user_id']).execute()

  await db.schema.createTable('office_invites')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('office_id', 'text', (c) => c.notNull().references('offices.id').onDelete('cascade'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull().check(sql`role in ('owner', 'admin', 'member')`))
    // Only the token's hash is kept; the token itself exists only in the mail.
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    // An inviter's account going takes their invitations with it.
    .addColumn('invited_by', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', sql`timestamptz(3)`, (c) => c.notNull())
    .addColumn('accepted_at', sql`timestamptz(3)`)
    .execute()
  // At most one pending invitation per office and address: inviting again replaces it.
  await db.schema.createIndex('office_invites_pending').on('office_invites').columns(['office_id', 'email']).unique().where(sql.ref('accepted_at'), 'is', null).execute()
  await db.schema.createIndex('office_invites_invited_by').on('office_invites').column('invited_by').execute()
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down (db: Kysely<any>): Promise<void> {
  for (const table of ['office_invites', 'office_members', 'offices']) {
    await db.schema.dropTable(table).execute()
  }
}
