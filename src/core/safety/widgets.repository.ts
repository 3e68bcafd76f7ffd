// All SQL of the widget catalogue and rooms' installations (DECISIONS §11).
import type { Selectable } from 'kysely'
import type { Db } from '../../db/database.js'
import type { RoomWidgetsTable, WidgetsTable } from '../../db/schema.js'

export type WidgetRow = Selectable<WidgetsTable>
export type InstallationRow = Selectable<RoomWidgetsTable>

/** The whole catalogue (admin-managed and small), by name. */
export async function listWidgets (db: Db): Promise<WidgetRow[]> {
  return await db.selectFrom('widgets').selectAll().orderBy('name').orderBy('id').limit(1000).execute()
}

export async function findWidget (db: Db, id: string, lock = false): Promise<WidgetRow | undefined> {
  const query = db.selectFrom('widgets').selectAll().where('id', '=', id)
  return await (lock ? query.forUpdate() : query).executeTakeFirst()
}

export async function insertWidget (db: Db, widget: { id: string, name: string, description: string, settingsSchema: unknown, now: Date }): Promise<WidgetRow> {
  return await db.insertInto('widgets').values({
    id: widget.id, name: widget.name, description: widget.description, settings_schema: JSON.stringify(widget.settingsSchema), created_at: widget.now, updated_at: widget.now
  }).returningAll().executeTakeFirstOrThrow()
}

export async function updateWidgetRow (db: Db, id: string, patch: { name?: string, description?: string, settingsSchema?: unknown }, now: Date): Promise<WidgetRow> {
  return await db.updateTable('widgets').set({
    ...(patch.name === undefined ? {} : { name: patch.name }),
    ...(patch.description === undefined ? {} : { description: patch.description }),
    ...(patch.settingsSchema === undefined ? {} : { settings_schema: JSON.stringify(patch.settingsSchema) }),
    updated_at: now
  }).where('id', '=', id).returningAll().executeTakeFirstOrThrow()
}

/** Deletes the widget and (cascade) its installations; answers the installations it removed. */
export async function deleteWidgetRow (db: Db, id: string): Promise<Array<{ id: string, room_id: string }>> {
  const removed = await db.selectFrom('room_widgets').select(['id', 'room_id']).where('widget_id', '=', id).execute()
  await db.deleteFrom('widgets').where('id', '=', id).execute()
  return removed
}

export async function listInstallations (db: Db, roomId: string): Promise<InstallationRow[]> {
  return await db.selectFrom('room_widgets').selectAll().where('room_id', '=', roomId).orderBy('created_at').orderBy('id').limit(1000).execute()
}

export async function countInstallations (db: Db, roomId: string): Promise<number> {
  const row = await db.selectFrom('room_widgets').select((eb) => eb.fn.countAll<string>().as('n')).where('room_id', '=', roomId).executeTakeFirstOrThrow()
  return Number(row.n)
}

export async function findInstallation (db: Db, roomId: string, id: string): Promise<InstallationRow | undefined> {
  return await db.selectFrom('room_widgets').selectAll().where('id', '=', id).where('room_id', '=', roomId).forUpdate().executeTakeFirst()
}

export async function insertInstallation (db: Db, row: { id: string, roomId: string, widgetId: string, settings: unknown, installedBy: string, now: Date }): Promise<InstallationRow> {
  return await db.insertInto('room_widgets').values({
    id: row.id, room_id: row.roomId, widget_id: row.widgetId, settings: JSON.stringify(row.settings), installed_by: row.installedBy, created_at: row.now, updated_at: row.now
  }).returningAll().executeTakeFirstOrThrow()
}

export async function updateInstallationSettings (db: Db, id: string, settings: unknown, now: Date): Promise<InstallationRow> {
  return await db.updateTable('room_widgets')
    .set((eb) => ({ settings: JSON.stringify(settings), updated_at: now, version: eb('version', '+', 1) }))
    .where('id', '=', id).returningAll().executeTakeFirstOrThrow()
}

export async function deleteInstallation (db: Db, id: string): Promise<void> {
  await db.deleteFrom('room_widgets').where('id', '=', id).execute()
}
