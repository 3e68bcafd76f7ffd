// Frozen: never edit a migration that has shipped; add a new one.
// Uploaded files (DECISIONS §9): what each is and whose; its bytes live in storage under `storage_key`.
import { sql, type Kysely } from 'kysely'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.createTable('uploads')
    .addColumn('id', 'text', (c) => c.primaryKey())
    // Account deletion removes the rows explicitly (and their bytes after the commit); the cascade
    // only guarantees that no row outlives its owner.
    .addColumn('owner_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('avatar', 'attachment')`))
    .addColumn('filename', 'text', (c) => c.notNull().check(sql`char_length(filename) between 1 and 255`))
    .addColumn('size', 'integer', (c) => c.notNull().check(sql`size > 0`))
    .addColumn('mime_type', 'text', (c) => c.notNull())
    .addColumn('storage_key', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema.createIndex('uploads_owner_id').on('uploads').column('owner_id').execute()
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('uploads').execute()
}
