// Frozen: never edit a migration that has shipped; add a new one.
import { sql, type Kysely } from 'kysely'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.createTable('users')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull().unique())
    .addColumn('display_name', 'text', (c) => c.notNull())
    .addColumn('avatar_url', 'text')
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .execute()

  await db.schema.createTable('sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('cookie', 'rpc')`))
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', sql`timestamptz(3)`, (c) => c.notNull())
    .addColumn('revoked_at', sql`timestamptz(3)`)
    .execute()
  await db.schema.createIndex('sessions_user_id').on('sessions').column('user_id').execute()

  await db.schema.createTable('refresh_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id').onDelete('cascade'))
    .addColumn('expires_at', sql`timestamptz(3)`, (c) => c.notNull())
    .addColumn('used_at', sql`timestamptz(3)`)
    .execute()
  await db.schema.createIndex('refresh_tokens_session_id').on('refresh_tokens').column('session_id').execute()

  await db.schema.createTable('login_links')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('poll_hash', 'text', (c) => c.unique())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', sql`timestamptz(3)`, (c) => c.notNull())
    .addColumn('used_at', sql`timestamptz(3)`)
    .addColumn('user_id', 'text', (c) => c.references('users.id').onDelete('cascade'))
    .addColumn('poll_delivered_at', sql`timestamptz(3)`)
    .execute()
  await db.schema.createIndex('login_links_expires_at').on('login_links').column('expires_at').execute()

  await db.schema.createTable('deletion_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('expires_at', sql`timestamptz(3)`, (c) => c.notNull())
    .addColumn('used_at', sql`timestamptz(3)`)
    .execute()
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down (db: Kysely<any>): Promise<void> {
  for (const table of ['deletion_tokens', 'login_links', 'refresh_tokens', 'sessions', 'users']) {
    await db.schema.dropTable(table).execute()
  }
}
