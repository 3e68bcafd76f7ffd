// All SQL of sparks as resources (title, content, lifecycle). Positions are written by
// src/core/canvas/canvas.repository.ts.
import { sql, type Selectable } from 'kysely'
import type { Db } from '../../db/database.js'
import type { SparksTable } from '../../db/schema.js'
import type { PageWindow } from '../pagination.js'

export type SparkRow = Selectable<SparksTable>

/** A spark with what access decisions need to know about its room. */
export type SparkWithRoom = SparkRow & { room_is_public: boolean, room_created_by: string, room_hidden_at: Date | null }

export async function insertSpark (db: Db, spark: { id: string, roomId: string, title: string, content: string, x: number, y: number, createdBy: string, now: Date }): Promise<SparkRow> {
  return await db.insertInto('sparks').values({
    id: spark.id,
    room_id: spark.roomId,
    title: spark.title,
    content: spark.content,
    x: spark.x,
    y: spark.y,
    created_by: spark.createdBy,
    created_at: spark.now,
    updated_at: spark.now
  }).returningAll().executeTakeFirstOrThrow()
}

/** Arbitrary, fixed: keeps these advisory locks apart from any other use of pg_advisory_xact_lock. */
const SPARK_CREATE_LOCK_CLASS = 0x5350 // "SP"

/**
 * Serialises spark creation in one room until the transaction ends, so a count taken after it stays
 * true until commit. An advisory lock, not a row lock on the room: creators already hold the room
 * FOR SHARE, and two of them upgrading to FOR UPDATE would deadlock. Rooms whose ids hash alike
 * only wait on each other.
 */
export async function lockSparkCreation (db: Db, roomId: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(${SPARK_CREATE_LOCK_CLASS}::int, hashtext(${roomId}))`.execute(db)
}

export async function countSparksInRoom (db: Db, roomId: string): Promise<number> {
  const { total } = await db.selectFrom('sparks').select(sql<number>`count(*)::int`.as('total')).where('room_id', '=', roomId).executeTakeFirstOrThrow()
  return total
}

export async function findSparkWithRoom (db: Db, id: string): Promise<SparkWithRoom | undefined> {
  return await db.selectFrom('sparks')
    .innerJoin('rooms', 'rooms.id', 'sparks.room_id')
    .selectAll('sparks')
    .select(['rooms.is_public as room_is_public', 'rooms.created_by as room_created_by', 'rooms.hidden_at as room_hidden_at'])
    .where('sparks.id', '=', id)
    .executeTakeFirst()
}

/** Locks the spark row for an edit or delete; the caller holds a share lock on its room already. */
export async function findSparkForUpdate (db: Db, id: string): Promise<SparkRow | undefined> {
  return await db.selectFrom('sparks').selectAll().where('id', '=', id).forUpdate().executeTakeFirst()
}

/** The sparks of a room the viewer may see (a hidden one is its creator's alone, room-access.ts). */
export async function listSparksInRoom (db: Db, roomId: string, viewerId: string, window: PageWindow): Promise<{ rows: SparkRow[], total: number }> {
  const base = db.selectFrom('sparks').where('room_id', '=', roomId).where((eb) => eb.or([eb('hidden_at', 'is', null), eb('created_by', '=', viewerId)]))
  const { total } = await base.select(sql<number>`count(*)::int`.as('total')).executeTakeFirstOrThrow()
  const rows = await base.selectAll()
    .orderBy('created_at').orderBy('id')
    .limit(window.limit).offset(window.offset)
    .execute()
  return { rows, total }
}

export async function updateSparkText (db: Db, id: string, patch: { title?: string, content?: string }, now: Date): Promise<SparkRow> {
  return await db.updateTable('sparks')
    .set((eb) => ({
      ...(patch.title === undefined ? {} : { title: patch.title }),
      ...(patch.content === undefined ? {} : { content: patch.content }),
      updated_at: now,
      version: eb('version', '+', 1)
    }))
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow()
}

export async function deleteSparkRow (db: Db, id: string): Promise<void> {
  await db.deleteFrom('sparks').where('id', '=', id).execute()
}

export async function deleteSparksInRoom (db: Db, roomId: string): Promise<void> {
  await db.deleteFrom('sparks').where('room_id', '=', roomId).execute()
}

/** Account deletion, one batch: up to `limit` of the user's sparks in rooms of others (their own
 *  rooms go whole); what went, for the events. */
export async function deleteSparksCreatedByBatch (db: Db, userId: string, limit: number): Promise<Array<{ id: string, roomId: string, version: number }>> {
  const next = db.selectFrom('sparks').select('id').where('created_by', '=', userId).limit(limit)
  const rows = await db.deleteFrom('sparks').where('id', 'in', next).returning(['id', 'room_id', 'version']).execute()
  return rows.map((row) => ({ id: row.id, roomId: row.room_id, version: row.version }))
}
