// All SQL of tile positions (a tile is a spark; its position is the spark's x/y). Every position
// write is one UPDATE statement and bumps the spark's version; multi-row locks are taken in id
// order so concurrent batches and layouts cannot deadlock.
import { sql } from 'kysely'
import type { Db } from '../../db/database.js'
import type { SparkRow, SparkWithRoom } from '../sparks/sparks.repository.js'
import { TILE_HEIGHT, TILE_WIDTH } from './grid.js'
import type { TilePosition } from './canvas.types.js'

export interface TileRoom {
  id: string
  room_id: string
  room_is_public: boolean
  room_created_by: string
}

/** A tile about to move, with what the move decides on, read in one round trip. */
export interface TileToMove extends SparkWithRoom {
  /** Whether the mover is a member of the tile's room already (then there is nothing to join). */
  mover_is_member: boolean
  /** Whether another tile of the room overlaps the target position (grid.ts `tilesOverlap`, in SQL). */
  target_collides: boolean
}

/**
 * The tile, its room's facts, the mover's membership and whether the target overlaps another tile,
 * holding the room row in share mode until commit, so a concurrent delete of the room or its switch
 * to private waits for this move. The room's facts come from the row as locked.
 */
export async function lockTileToMove (db: Db, tileId: string, moverId: string, target: { x: number, y: number }): Promise<TileToMove | undefined> {
  const row = await db.selectFrom('sparks')
    .innerJoin('rooms', 'rooms.id', 'sparks.room_id')
    .selectAll('sparks')
    .select(['rooms.is_public as room_is_public', 'rooms.created_by as room_created_by'])
    .select((eb) => [
      eb.exists(eb.selectFrom('room_members').select('room_members.user_id').whereRef('room_members.room_id', '=', 'sparks.room_id').where('room_members.user_id', '=', moverId)).as('mover_is_member'),
      eb.exists(eb.selectFrom('sparks as other').select('other.id')
        .whereRef('other.room_id', '=', 'sparks.room_id')
        .whereRef('other.id', '<>', 'sparks.id')
        .where(sql<boolean>`abs(other.x - ${target.x}) < ${TILE_WIDTH} and abs(other.y - ${target.y}) < ${TILE_HEIGHT}`)).as('target_collides')
    ])
    .where('sparks.id', '=', tileId)
    .forShare('rooms')
    .executeTakeFirst()
  return row === undefined ? undefined : { ...row, mover_is_member: Boolean(row.mover_is_member), target_collides: Boolean(row.target_collides) }
}

export async function tilePositions (db: Db, roomId: string): Promise<TilePosition[]> {
  return await db.selectFrom('sparks').select(['id as tileId', 'x', 'y']).where('room_id', '=', roomId).execute()
}

export async function tileIdsInRoom (db: Db, roomId: string): Promise<string[]> {
  const rows = await db.selectFrom('sparks').select('id').where('room_id', '=', roomId).execute()
  return rows.map((r) => r.id)
}

/** The tiles among `ids` that exist, with their rooms' visibility facts. */
export async function findTileRooms (db: Db, ids: readonly string[]): Promise<TileRoom[]> {
  if (ids.length === 0) return []
  return await db.selectFrom('sparks')
    .innerJoin('rooms', 'rooms.id', 'sparks.room_id')
    .select(['sparks.id', 'sparks.room_id', 'rooms.is_public as room_is_public', 'rooms.created_by as room_created_by'])
    .where('sparks.id', 'in', ids)
    .execute()
}

export async function lockTiles (db: Db, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return []
  const rows = await db.selectFrom('sparks').select('id').where('id', 'in', ids).orderBy('id').forUpdate().execute()
  return rows.map((r) => r.id)
}

export async function lockRoomTiles (db: Db, roomId: string): Promise<string[]> {
  const rows = await db.selectFrom('sparks').select('id').where('room_id', '=', roomId).orderBy('id').forUpdate().execute()
  return rows.map((r) => r.id)
}

export async function setTilePosition (db: Db, id: string, x: number, y: number, now: Date): Promise<SparkRow | undefined> {
  return await db.updateTable('sparks')
    .set((eb) => ({ x, y, updated_at: now, version: eb('version', '+', 1) }))
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst()
}

/** Statement size stays far below Postgres's 65535 parameters. */
const ROWS_PER_STATEMENT = 5000

/** Sets many positions, one UPDATE … FROM (VALUES …) per chunk; callers run it in their transaction. */
export async function setTilePositions (db: Db, positions: readonly TilePosition[], now: Date): Promise<number> {
  let updated = 0
  for (let start = 0; start < positions.length; start += ROWS_PER_STATEMENT) {
    const chunk = positions.slice(start, start + ROWS_PER_STATEMENT)
    const values = sql.join(chunk.map((p) => sql`(${p.tileId}, ${p.x}::double precision, ${p.y}::double precision)`))
    const result = await sql`
      update sparks as s
      set x = v.x, y = v.y, version = s.version + 1, updated_at = ${now}
      from (values ${values}) as v(id, x, y)
      where s.id = v.id`.execute(db)
    updated += Number(result.numAffectedRows ?? 0n)
  }
  return updated
}
