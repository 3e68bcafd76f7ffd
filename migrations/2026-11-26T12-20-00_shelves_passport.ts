// Frozen: never edit a migration that has shipped; add a new one.
// Shelves of ordered links and the passport (DECISIONS §10). Both belong to one user and go with
// the user row (ON DELETE CASCADE), which is how account deletion removes them (DECISIONS §3).
import { sql, type Kysely } from 'kysely'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.createTable('shelves')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('owner_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('is_public', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  // A user's shelves are listed newest first.
  await db.schema.createIndex('shelves_owner_created').on('shelves').columns(['owner_id', 'created_at', 'id']).execute()

  await db.schema.createTable('shelf_links')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('shelf_id', 'text', (c) => c.notNull().references('shelves.id').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull().defaultTo(''))
    // A fractional-indexing key: links sort by it byte by byte (its digits are 0-9A-Za-z, whose
    // order a linguistic collation would not keep), hence the "C" collation.
    .addColumn('position', sql`text collate "C"`, (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    // No two links of a shelf share a place. Deferrable (checked at the end of each statement, not
    // row by row) so that the rare re-keying of a whole shelf can be one UPDATE.
    .addUniqueConstraint('shelf_links_shelf_position', ['shelf_id', 'position'], (c) => c.deferrable().initiallyImmediate())
    .execute()

  await db.schema.createTable('passports')
    .addColumn('user_id', 'text', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    .addColumn('headline', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('summary', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('location', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('is_public', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('updated_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .execute()

  await db.schema.createTable('passport_skills')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('passports.user_id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    // The name folded for comparison (NFKC, lower case), computed by the core: a skill name is
    // unique per passport case-insensitively, whatever the database's locale.
    .addColumn('name_key', 'text', (c) => c.notNull())
    .addColumn('level', 'integer', (c) => c.check(sql`level between 1 and 5`))
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('passport_skills_user_name', ['user_id', 'name_key'])
    .execute()

  await db.schema.createTable('passport_experience')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('passports.user_id').onDelete('cascade'))
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('company', 'text', (c) => c.notNull())
    // YYYY-MM; such strings sort as the months they name.
    .addColumn('start_date', 'text', (c) => c.notNull())
    .addColumn('end_date', 'text')
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint('passport_experience_dates', sql`end_date is null or end_date >= start_date`)
    .execute()
  await db.schema.createIndex('passport_experience_user').on('passport_experience').column('user_id').execute()
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down (db: Kysely<any>): Promise<void> {
  for (const table of ['passport_experience', 'passport_skills', 'passports', 'shelf_links', 'shelves']) {
    await db.schema.dropTable(table).execute()
  }
}
