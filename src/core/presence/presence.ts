// Presence operations (DECISIONS §17 "Presence"): who is on a room's canvas now, and being there
// without a cursor. Nothing is stored: the board (src/live/cursor-presence.ts) holds who is present,
// relayed between instances as cursors are; the database only says who may be shown.
import type { Db } from '../../db/database.js'
import type { Clock } from '../../infra/clock.js'
import type { Actor } from '../actor.js'
import { loadVisibleRoom } from '../rooms/room-access.js'
import { joinRoom } from '../rooms/room-members.repository.js'
import { parseInput } from '../validation.js'
import { shownPresentUsers } from './presence.repository.js'
import { toUserSummary } from '../users/users.types.js'
import { MAX_LISTED_PRESENT, PresenceQuery, ReportPresenceInput, toPresentUser, type PresenceBoard, type RoomPresence } from './presence.types.js'

export function createPresence (deps: { db: Db, clock: Clock, presenceBoard: PresenceBoard }) {
  const { db, clock, presenceBoard: board } = deps
  return {
    /** The users present in a room the caller may see (others: not_found), oldest first, at most
     *  MAX_LISTED_PRESENT; suspended users are left out. Reading presence does not join the room. */
    async get (actor: Actor, input: unknown): Promise<RoomPresence> {
      const { roomId } = parseInput(PresenceQuery, input)
      await loadVisibleRoom(db, actor, roomId)
      const present = board.presentIn(roomId)
      const { rows, total } = await shownPresentUsers(db, roomId, present.map((p) => p.userId), MAX_LISTED_PRESENT)
      const records = new Map(present.map((p) => [p.userId, p]))
      const users = rows.flatMap((row) => {
        const record = records.get(row.id)
        return record === undefined ? [] : [toPresentUser(toUserSummary(row), record)]
      })
      return { roomId, users, total, more: total - users.length }
    },

    /** The caller is present in a room they may see (others: not_found) without showing a cursor;
     *  again: still present (`lastActiveAt` moves). Being present is opening the room's canvas, so it
     *  joins a public room as reading its canvas state does (DECISIONS §5). */
    async report (actor: Actor, input: unknown): Promise<void> {
      const { roomId } = parseInput(ReportPresenceInput, input)
      await loadVisibleRoom(db, actor, roomId)
      await joinRoom(db, roomId, actor.userId, clock.now())
      board.present(actor.userId, roomId)
    }
  }
}

export type Presence = ReturnType<typeof createPresence>
