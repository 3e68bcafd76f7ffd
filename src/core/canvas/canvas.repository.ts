// All SQL of tile positions (a tile is a spark; its position is the spark's x/y). Every position
// write is one UPDATE statement and bumps the spark's version; multi-row locks are taken in id
// order so concurrent batches and layouts cannot deadlock.
import { sql } from 'kysely'
import type { Db } from '../../db/database.js'
import { insertEventWithVersionOf, type NewEvent } from '../event-log.repository.js'
import type { SparkRow, SparkWithRoom } from '../sparks/sparks.repository.js'
import { TILE_HEIGHT, TILE_WIDTH } from './grid.js'
import type { TilePosition, TileState } from './canvas.types.js'

export interface TileRoom {
  id: string
  room_id: string
  created_by: string
  hidden_at: Date | null
  room_is_public: boolean
  room_created_by: string
  room_hidden_at: Date | null
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
    .select(['rooms.is_public as room_is_public', 'rooms.created_by as room_created_by', 'rooms.hidden_at as room_hidden_at'])
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

/** A room's tiles; with `viewerId`, only those the viewer may see (hidden ones are their creator's
 *  alone, room-access.ts), with `null` only those everyone may see (what goes to the whole room). */
export async function tilePositions (db: Db, roomId: string, viewerId?: string | null): Promise<TileState[]> {
  let query = db.selectFrom('sparks').select(['id as tileId', 'x', 'y', 'version']).where('room_id', '=', roomId)
  if (viewerId === null) query = query.where('hidden_at', 'is', null)
  else if (viewerId !== undefined) query = query.where((eb) => eb.or([eb('hidden_at', 'is', null), eb('created_by', '=', viewerId)]))
  return await query.execute()
}

/** The room's hidden tiles (a moderation action): events about them go to their creators alone. */
export async function hiddenTileIds (db: Db, roomId: string): Promise<string[]> {
  return (await db.selectFrom('sparks').select('id').where('room_id', '=', roomId).where('hidden_at', 'is not', null).execute()).map((r) => r.id)
}

/** A room's tiles and their versions, by id: what a layout is computed from and guarded by. */
export interface TileVersion { id: string, version: number }

export async function tileVersionsInRoom (db: Db, roomId: string): Promise<TileVersion[]> {
  return await db.selectFrom('sparks').select(['id', 'version']).where('room_id', '=', roomId).orderBy('id').execute()
}

/** The same, every row locked (in id order, as batches lock, so the two cannot deadlock). */
export async function lockRoomTileVersions (db: Db, roomId: string): Promise<TileVersion[]> {
  return await db.selectFrom('sparks').select(['id', 'version']).where('room_id', '=', roomId).orderBy('id').forUpdate().execute()
}

/** The tiles among `ids` that exist, with their rooms' visibility facts. */
export async function findTileRooms (db: Db, ids: readonly string[]): Promise<TileRoom[]> {
  if (ids.length === 0) return []
  return await db.selectFrom('sparks')
    .innerJoin('rooms', 'rooms.id', 'sparks.room_id')
    .select(['sparks.id', 'sparks.room_id', 'sparks.created_by', 'sparks.hidden_at', 'rooms.is_public as room_is_public', 'rooms.created_by as room_created_by', 'rooms.hidden_at as room_hidden_at'])
    .where('sparks.id', 'in', ids)
    .execute()
}

export async function lockTiles (db: Db, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return []
  const rows = await db.selectFrom('sparks').select('id').where('id', 'in', ids).orderBy('id').forUpdate().execute()
  return rows.map((r) => r.id)
}

/**
 * Moves one tile and logs its event (the payload completed with the version the move gives the
 * spark) in one statement: the row's lock is held for this round trip and the commit only.
 */
export async function setTilePositionLogged (db: Db, id: string, x: number, y: number, now: Date, event: NewEvent): Promise<SparkRow | undefined> {
  const result = await sql<SparkRow>`
    with moved as (
      update sparks set x = ${x}::double precision, y = ${y}::double precision, updated_at = ${now}, version = version + 1
      where id = ${id} returning *
    ),
    logged as (${insertEventWithVersionOf(event, 'moved')})
    select * from moved`.execute(db)
  return result.rows[0]
}

/** Sets many positions in one UPDATE (the positions as arrays: four parameters, however many tiles);
 *  callers run it in their transaction, with the rows locked. Answers each moved tile's new version, by id. */
export async function setTilePositions (db: Db, positions: readonly TilePosition[], now: Date): Promise<Map<string, number>> {
  if (positions.length === 0) return new Map()
  const result = await sql<{ id: string, version: number }>`
    update sparks as s
    set x = v.x, y = v.y, version = s.version + 1, updated_at = ${now}
    from unnest(${positions.map((p) => p.tileId)}::text[], ${positions.map((p) => p.x)}::double precision[], ${positions.map((p) => p.y)}::double precision[]) as v(id, x, y)
    where s.id = v.id
    returning s.id, s.version`.execute(db)
  return new Map(result.rows.map((row) => [row.id, row.version]))
}
