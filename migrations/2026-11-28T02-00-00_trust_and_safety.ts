// Frozen: never edit a migration that has shipped; add a new one.
// Trust and safety (DECISIONS §11): reports, moderation actions and their appeals, the users'
// inbox of service notices, the message of the day, the widget catalogue and rooms' widget
// installations; `hidden_at` on rooms, sparks and shelves (set by a `hide` action: the item then
// exists only for its owner) and `suspended_at` on users (set by a `suspend` action).
// Rows that belong to a user go with the user row (ON DELETE CASCADE: account deletion). Actions
// and reports name their target by type and id without a foreign key: a target may be deleted
// while its report or action stays on record for the admins.
import { sql, type Kysely } from 'kysely'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up (db: Kysely<any>): Promise<void> {
  for (const table of ['rooms', 'sparks', 'shelves']) {
    await db.schema.alterTable(table).addColumn('hidden_at', sql`timestamptz(3)`).execute()
  }
  await db.schema.alterTable('users').addColumn('suspended_at', sql`timestamptz(3)`).execute()

  await db.schema.createTable('reports')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('reporter_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('target_type', 'text', (c) => c.notNull().check(sql`target_type in ('room', 'spark', 'user', 'shelf', 'office')`))
    .addColumn('target_id', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull().check(sql`reason in ('spam', 'abuse', 'harassment', 'illegal', 'other')`))
    .addColumn('details', 'text')
    // The local classifier's labels of the reported text, for triage (src/core/safety/classify.ts).
    .addColumn('labels', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('open').check(sql`status in ('open', 'actioned', 'dismissed')`))
    .addColumn('outcome', 'text')
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('resolved_at', sql`timestamptz(3)`)
    .addColumn('resolved_by', 'text')
    .execute()
  // One open report per reporter and target (DECISIONS §11): the database's own guarantee.
  await db.schema.createIndex('reports_one_open').on('reports').columns(['reporter_id', 'target_type', 'target_id']).unique().where(sql.ref('status'), '=', 'open').execute()
  await db.schema.createIndex('reports_reporter_created').on('reports').columns(['reporter_id', 'created_at', 'id']).execute()
  await db.schema.createIndex('reports_status_created').on('reports').columns(['status', 'created_at', 'id']).execute()

  await db.schema.createTable('moderation_actions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('hide', 'suspend', 'warn')`))
    .addColumn('target_type', 'text', (c) => c.notNull())
    .addColumn('target_id', 'text', (c) => c.notNull())
    // The user the action affects: the hidden item's owner, or the suspended or warned user.
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('report_id', 'text', (c) => c.references('reports.id').onDelete('set null'))
    .addColumn('note', 'text')
    .addColumn('taken_by', 'text', (c) => c.notNull())
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('reversed_at', sql`timestamptz(3)`)
    .execute()
  await db.schema.createIndex('moderation_actions_user').on('moderation_actions').column('user_id').execute()
  await db.schema.createIndex('moderation_actions_target').on('moderation_actions').columns(['target_type', 'target_id']).execute()

  await db.schema.createTable('appeals')
    .addColumn('id', 'text', (c) => c.primaryKey())
    // One appeal per action (DECISIONS §11).
    .addColumn('action_id', 'text', (c) => c.notNull().unique().references('moderation_actions.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('text', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('pending').check(sql`status in ('pending', 'upheld', 'overturned')`))
    .addColumn('note', 'text')
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('decided_at', sql`timestamptz(3)`)
    .addColumn('decided_by', 'text')
    .execute()
  await db.schema.createIndex('appeals_user_created').on('appeals').columns(['user_id', 'created_at', 'id']).execute()
  await db.schema.createIndex('appeals_status_created').on('appeals').columns(['status', 'created_at', 'id']).execute()

  await db.schema.createTable('messages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('action_id', 'text', (c) => c.references('moderation_actions.id').onDelete('set null'))
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('read_at', sql`timestamptz(3)`)
    .execute()
  // The inbox is listed newest first.
  await db.schema.createIndex('messages_user_created').on('messages').columns(['user_id', 'created_at', 'id']).execute()

  await db.schema.createTable('motd')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('text', 'text', (c) => c.notNull())
    .addColumn('severity', 'text', (c) => c.notNull().check(sql`severity in ('info', 'warning', 'critical')`))
    .addColumn('starts_at', sql`timestamptz(3)`, (c) => c.notNull())
    .addColumn('ends_at', sql`timestamptz(3)`, (c) => c.notNull())
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint('motd_window', sql`ends_at > starts_at`)
    .execute()
  await db.schema.createIndex('motd_window').on('motd').columns(['ends_at', 'starts_at']).execute()

  await db.schema.createTable('widgets')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('settings_schema', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .execute()

  await db.schema.createTable('room_widgets')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('room_id', 'text', (c) => c.notNull().references('rooms.id').onDelete('cascade'))
    // Deleting a widget from the catalogue removes its installations.
    .addColumn('widget_id', 'text', (c) => c.notNull().references('widgets.id').onDelete('cascade'))
    .addColumn('settings', 'jsonb', (c) => c.notNull())
    .addColumn('installed_by', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema.createIndex('room_widgets_room').on('room_widgets').columns(['room_id', 'created_at', 'id']).execute()
  await db.schema.createIndex('room_widgets_widget').on('room_widgets').column('widget_id').execute()
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down (db: Kysely<any>): Promise<void> {
  for (const table of ['room_widgets', 'widgets', 'motd', 'messages', 'appeals', 'moderation_actions', 'reports']) {
    await db.schema.dropTable(table).execute()
  }
  await db.schema.alterTable('users').dropColumn('suspended_at').execute()
  for (const table of ['rooms', 'sparks', 'shelves']) {
    await db.schema.alterTable(table).dropColumn('hidden_at').execute()
  }
}
