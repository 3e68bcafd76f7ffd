// Who may do what with a room and the sparks in it (DECISIONS §5), decided here once for every
// operation of rooms, sparks and the canvas:
// - a private room exists only for its creator: anyone else gets not_found, for the room, its
//   sparks and its tiles alike, so its existence never leaks;
// - a public room is readable by every signed-in user, who may add sparks and move any tile;
// - only the creator renames, deletes or switches visibility (others who can see it: forbidden);
// - a spark's title/content are edited, and the spark deleted, by its creator or the room's creator.
import type { Db } from '../../db/database.js'
import type { Actor } from '../actor.js'
import { forbidden, notFound } from '../errors.js'
import { findRoom, type RoomLock, type RoomRow } from './rooms.repository.js'

export function canSeeRoom (room: Pick<RoomRow, 'is_public' | 'created_by'>, actor: Actor | null): boolean {
  return room.is_public || (actor !== null && room.created_by === actor.userId)
}

/** The room when the caller may see it; otherwise not_found, whether it is missing or private. */
export function requireVisible<R extends Pick<RoomRow, 'is_public' | 'created_by'>> (room: R | undefined, actor: Actor | null, what = 'Room'): R {
  if (room === undefined || !canSeeRoom(room, actor)) throw notFound(what)
  return room
}

/** A spark (tile) read with its room's facts, when the caller may see that room; otherwise not_found. */
export function requireVisibleTile<T extends { room_is_public: boolean, room_created_by: string }> (tile: T | undefined, actor: Actor | null, what: string): T {
  if (tile === undefined || !canSeeRoom({ is_public: tile.room_is_public, created_by: tile.room_created_by }, actor)) throw notFound(what)
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
