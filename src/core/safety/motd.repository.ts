// All SQL of the message of the day (DECISIONS §11).
import type { Selectable } from 'kysely'
import type { Db } from '../../db/database.js'
import type { MotdSeverity, MotdTable } from '../../db/schema.js'

export type MotdRow = Selectable<MotdTable>

/** The messages shown now: starts_at <= now < ends_at, the soonest to end first. */
export async function activeMotd (db: Db, now: Date): Promise<MotdRow[]> {
  return await db.selectFrom('motd').selectAll().where('starts_at', '<=', now).where('ends_at', '>', now)
    .orderBy('starts_at', 'desc').orderBy('id').limit(100).execute()
}

export async function insertMotd (db: Db, motd: { id: string, text: string, severity: MotdSeverity, startsAt: Date, endsAt: Date, now: Date }): Promise<MotdRow> {
  return await db.insertInto('motd').values({
    id: motd.id, text: motd.text, severity: motd.severity, starts_at: motd.startsAt, ends_at: motd.endsAt, created_at: motd.now, updated_at: motd.now
  }).returningAll().executeTakeFirstOrThrow()
}

export async function findMotd (db: Db, id: string): Promise<MotdRow | undefined> {
  return await db.selectFrom('motd').selectAll().where('id', '=', id).forUpdate().executeTakeFirst()
}

export async function updateMotdRow (db: Db, id: string, patch: { text?: string, severity?: MotdSeverity, startsAt?: Date, endsAt?: Date }, now: Date): Promise<MotdRow> {
  return await db.updateTable('motd').set({
    ...(patch.text === undefined ? {} : { text: patch.text }),
    ...(patch.severity === undefined ? {} : { severity: patch.severity }),
    ...(patch.startsAt === undefined ? {} : { starts_at: patch.startsAt }),
    ...(patch.endsAt === undefined ? {} : { ends_at: patch.endsAt }),
    updated_at: now
  }).where('id', '=', id).returningAll().executeTakeFirstOrThrow()
}
