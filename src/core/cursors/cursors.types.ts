// Input schemas of cursor reports (DECISIONS §6/§7), shared by the REST routes and core validation.
import { Type } from 'typebox'
import { Coordinate } from '../canvas/canvas.types.js'
import { RoomId } from '../rooms/rooms.types.js'

export const CursorMoveInput = Type.Object({ roomId: RoomId, x: Coordinate, y: Coordinate }, { additionalProperties: false })
export const CursorLeaveInput = Type.Object({ roomId: RoomId }, { additionalProperties: false })

/** Where cursor reports go: coalesced and relayed to every instance (see cursor-presence.ts). */
export interface CursorFeed {
  move (position: { userId: string, roomId: string, x: number, y: number }): void
  leave (userId: string, roomId: string): void
}
