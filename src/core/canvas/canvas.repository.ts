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
  /** Whether another tile the mover may see overlaps the target position (grid.ts `tilesOverlap`, in SQL). */
  target_collides: boolean
  /** The same among the tiles everyone may see: what the room's event may say. */
  target_collides_openly: boolean
}

/**
 * The room's tiles `viewerId` may see (room-access.ts `canSeeTile`: a hidden one is its creator's
 * alone), as a condition on `sparks` (or the alias `table`) for the queries below.
 */
function seenBy (table: 'sparks' | 'other', viewerId: string) {
  return sql<boolean>`(${sql.ref(`${table}.hidden_at`)} is null or ${sql.ref(`${table}.created_by`)} = ${viewerId})`
}

/**
 * The tile, its room's facts, the mover's membership and whether the target overlaps another tile,
 * holding the room row in share mode until commit, so a concurrent delete of the room or its switch
 * to private waits for this move. The room's facts come from the row as locked. Collisions are with
 * the tiles the mover may see: another user's hidden tile does not exist for them (DECISIONS §17).
 */
export async function lockTileToMove (db: Db, tileId: string, moverId: string, target: { x: number, y: number }): Promise<TileToMove | undefined> {
  const overlapsTarget = sql<boolean>`abs(other.x - ${target.x}) < ${TILE_WIDTH} and abs(other.y - ${target.y}) < ${TILE_HEIGHT}`
  const row = await db.selectFrom('sparks')
    .innerJoin('rooms', 'rooms.id', 'sparks.room_id')
    .selectAll('sparks')
    .select(['rooms.is_public as room_is_public', 'rooms.created_by as room_created_by', 'rooms.hidden_at as room_hidden_at'])
    .select((eb) => {
      const others = eb.selectFrom('sparks as other').select('other.id')
        .whereRef('other.room_id', '=', 'sparks.room_id')
        .whereRef('other.id', '<>', 'sparks.id')
        .where(overlapsTarget)
      return [
        eb.exists(eb.selectFrom('room_members').select('room_members.user_id').whereRef('room_members.room_id', '=', 'sparks.room_id').where('room_members.user_id', '=', moverId)).as('mover_is_member'),
        eb.exists(others.where(seenBy('other', moverId))).as('target_collides'),
        eb.exists(others.where('other.hidden_at', 'is', null)).as('target_collides_openly')
      ]
    })
    .where('sparks.id', '=', tileId)
    .forShare('rooms')
    .executeTakeFirst()
  return row === undefined
    ? undefined
    : { ...row, mover_is_member: Boolean(row.mover_is_member), target_collides: Boolean(row.target_collides), target_collides_openly: Boolean(row.target_collides_openly) }
}

/** A room's tiles that `viewerId` may see (hidden ones are their creator's alone, room-access.ts). */
export async function tilePositions (db: Db, roomId: string, viewerId: string): Promise<TileState[]> {
  return await db.selectFrom('sparks').select(['id as tileId', 'x', 'y', 'version']).where('room_id', '=', roomId).where(seenBy('sparks', viewerId)).execute()
}

/** A tile's place as validation reads it, and whether it is hidden (then the viewer is its creator). */
export interface TileSpot extends TilePosition { hidden: boolean }

/** A room's tiles that `viewerId` may see, with their places: what validation works on. */
export async function tileSpots (db: Db, roomId: string, viewerId: string): Promise<TileSpot[]> {
  const rows = await db.selectFrom('sparks').select(['id as tileId', 'x', 'y', 'hidden_at']).where('room_id', '=', roomId).where(seenBy('sparks', viewerId)).execute()
  return rows.map(({ tileId, x, y, hidden_at: hiddenAt }) => ({ tileId, x, y, hidden: hiddenAt !== null }))
}

/** A room's tiles and their versions, by id: what a layout is computed from and guarded by. `hidden`:
 *  hidden by a moderator (then the viewer is its creator, and only they may hear where it goes). */
export interface TileVersion { id: string, version: number, hidden: boolean }

/** The room's tiles `viewerId` may see, in id order: another user's hidden tile is neither laid out
 *  nor moved by the viewer's layout (DECISIONS §17). */
export async function tileVersionsInRoom (db: Db, roomId: string, viewerId: string): Promise<TileVersion[]> {
  const rows = await db.selectFrom('sparks').select(['id', 'version', 'hidden_at']).where('room_id', '=', roomId).where(seenBy('sparks', viewerId)).orderBy('id').execute()
  return rows.map(({ id, version, hidden_at: hiddenAt }) => ({ id, version, hidden: hiddenAt !== null }))
}

/** The same, every row locked (in id order, as batches lock, so the two cannot deadlock). */
export async function lockRoomTileVersions (db: Db, roomId: string, viewerId: string): Promise<TileVersion[]> {
  const rows = await db.selectFrom('sparks').select(['id', 'version', 'hidden_at']).where('room_id', '=', roomId).where(seenBy('sparks', viewerId)).orderBy('id').forUpdate().execute()
  return rows.map(({ id, version, hidden_at: hiddenAt }) => ({ id, version, hidden: hiddenAt !== null }))
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
