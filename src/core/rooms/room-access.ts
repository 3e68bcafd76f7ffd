// Who may do what with a room and the sparks in it (DECISIONS §5), decided here once for every
// operation of rooms, sparks and the canvas:
// - a private room exists only for its creator: anyone else gets not_found, for the room, its
//   sparks and its tiles alike, so its existence never leaks;
// - a public room is readable by every signed-in user, who may add sparks and move any tile;
// - only the creator renames, deletes or switches visibility (others who can see it: forbidden);
// - a spark's title/content are edited, and the spark deleted, by its creator or the room's creator;
// - a hidden room or spark (a moderation action, DECISIONS §11) exists only for its owner: to anyone
//   else it is exactly like a private room, here and in the SQL that lists, counts and delivers
//   (room-members.repository.ts, rooms.repository.ts, sparks.repository.ts, canvas.repository.ts).
import type { Db } from '../../db/database.js'
import type { Actor } from '../actor.js'
import { forbidden, notFound } from '../errors.js'
import { findRoom, type RoomLock, type RoomRow } from './rooms.repository.js'

/** What the room rule reads of a room row. */
export type RoomFacts = Pick<RoomRow, 'is_public' | 'created_by' | 'hidden_at'>

/** What the tile rule reads: the spark's own facts and its room's. */
export interface TileFacts {
  created_by: string
  hidden_at: Date | null
  room_is_public: boolean
  room_created_by: string
  room_hidden_at: Date | null
}

export function canSeeRoom (room: RoomFacts, actor: Actor | null): boolean {
  if (actor !== null && room.created_by === actor.userId) return true
  return room.is_public && room.hidden_at === null
}

/** A spark in a room the caller may see: hidden, it exists only for its creator. The same rule for
 *  a room's tiles in SQL: canvas.repository.ts `seenBy` (layouts, collisions, validation, state). */
export function canSeeTile (tile: TileFacts, actor: Actor | null): boolean {
  if (!canSeeRoom({ is_public: tile.room_is_public, created_by: tile.room_created_by, hidden_at: tile.room_hidden_at }, actor)) return false
  return tile.hidden_at === null || (actor !== null && tile.created_by === actor.userId)
}

/** The room when the caller may see it; otherwise not_found, whether it is missing, private or hidden. */
export function requireVisible<R extends RoomFacts> (room: R | undefined, actor: Actor | null, what = 'Room'): R {
  if (room === undefined || !canSeeRoom(room, actor)) throw notFound(what)
  return room
}

/** A spark (tile) read with its room's facts, when the caller may see it; otherwise not_found. */
export function requireVisibleTile<T extends TileFacts> (tile: T | undefined, actor: Actor | null, what: string): T {
  if (tile === undefined || !canSeeTile(tile, actor)) throw notFound(what)
  return tile
}

export async function loadVisibleRoom (db: Db, actor: Actor | null, roomId: string, lock: RoomLock = 'none'): Promise<RoomRow> {
  return requireVisible(await findRoom(db, roomId, lock), actor)
}

export function requireRoomCreator (room: Pick<RoomRow, 'created_by'>, actor: Actor, action: string): void {
  if (room.created_by !== actor.userId) throw forbidden(`Only the room's creator may ${action} it.`)
}

export function requireSparkEditor (spark: { created_by: string }, room: Pick<RoomRow, 'created_by'>, actor: Actor, action: string): void {
  if (spark.created_by !== actor.userId && room.created_by !== actor.userId) {
    throw forbidden(`Only the spark's creator or the room's creator may ${action} it.`)
  }
}
