// Frozen: never edit a migration that has shipped; add a new one.
// Rooms, their sparks (canvas tiles) and room membership (DECISIONS §5 "Room members").
import { sql, type Kysely } from 'kysely'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.createTable('rooms')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('is_public', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('created_by', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema.createIndex('rooms_created_by').on('rooms').column('created_by').execute()
  // The public listing pages through public rooms newest first.
  await db.schema.createIndex('rooms_public_created_at').on('rooms').columns(['created_at', 'id']).where(sql.ref('is_public'), '=', true).execute()

  await db.schema.createTable('sparks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('room_id', 'text', (c) => c.notNull().references('rooms.id').onDelete('cascade'))
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('x', 'double precision', (c) => c.notNull())
    .addColumn('y', 'double precision', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
    .execute()
  await db.schema.createIndex('sparks_room_id_created_at').on('sparks').columns(['room_id', 'created_at', 'id']).execute()
  await db.schema.createIndex('sparks_created_by').on('sparks').column('created_by').execute()

  await db.schema.createTable('room_members')
    .addColumn('room_id', 'text', (c) => c.notNull().references('rooms.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('joined_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('room_members_pkey', ['room_id', 'user_id'])
    .execute()
  // "The caller's rooms" is a lookup by user.
  await db.schema.createIndex('room_members_user_id').on('room_members').column('user_id').execute()
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down (db: Kysely<any>): Promise<void> {
  for (const table of ['room_members', 'sparks', 'rooms']) {
    await db.schema.dropTable(table).execute()
  }
}
