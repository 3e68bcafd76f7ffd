// Presence (DECISIONS §17 "Presence"): who is on a room's canvas now. The shapes both transports
// answer, the input schemas REST shares, and the board the core reads — held in memory by every
// instance and shared as cursors are (src/live/cursor-presence.ts).
import { Type } from 'typebox'
import { RoomId } from '../rooms/rooms.types.js'
import type { UserSummary } from '../users/users.types.js'

/** GetPresence lists at most this many users (oldest first); `total` and `more` count the rest. */
export const MAX_LISTED_PRESENT = 200

/** Query string of GET /api/canvas/presence: extra parameters (cache busters) are ignored. */
export const PresenceQuery = Type.Object({ roomId: RoomId })
export const ReportPresenceInput = Type.Object({ roomId: RoomId }, { additionalProperties: false })

/** One user's presence in one room as the board holds it (times in milliseconds since the epoch). */
export interface PresenceRecord {
  userId: string
  since: number
  lastActiveAt: number
}

/** What this instance knows of presence: every instance holds the same, relayed between them. */
export interface PresenceBoard {
  /** The user is present in the room without a cursor (or still is: refreshes `lastActiveAt`). */
  present (userId: string, roomId: string): void
  /** The users present in the room, oldest first. */
  presentIn (roomId: string): PresenceRecord[]
}

/** A present user as others see them. */
export interface PresentUser {
  userId: string
  displayName: string
  avatarUrl: string
  /** When they became present in the room (ISO 8601). */
  since: string
  /** Their latest cursor or presence report there (ISO 8601). */
  lastActiveAt: string
}

/** A present user as GetPresence lists them and `presence:joined` shows them. */
export function toPresentUser (user: UserSummary, record: PresenceRecord): PresentUser {
  return { userId: user.id, displayName: user.displayName, avatarUrl: user.avatarUrl, since: new Date(record.since).toISOString(), lastActiveAt: new Date(record.lastActiveAt).toISOString() }
}

/** GetPresence's answer: `users` holds at most MAX_LISTED_PRESENT, `total` counts every present user
 *  the caller may be shown, `more` those not listed (`total - users.length`). */
export interface RoomPresence {
  roomId: string
  users: PresentUser[]
  total: number
  more: number
}
