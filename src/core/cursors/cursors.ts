// Cursor reports (DECISIONS §7): a position in a room makes the caller active on its canvas; leaving
// ends that. Only a room the caller may see accepts either (otherwise it does not exist: 404).
// Nothing is stored: positions are relayed to every instance and delivered coalesced.
import type { Actor } from '../actor.js'
import type { AudienceResolver } from '../audience.js'
import { notFound } from '../errors.js'
import { parseInput } from '../validation.js'
import { CursorLeaveInput, CursorMoveInput, type CursorFeed } from './cursors.types.js'

export function createCursors (feed: CursorFeed, audience: AudienceResolver) {
  async function requireVisibleRoom (userId: string, roomId: string): Promise<void> {
    if (!await audience.canSee(userId, { kind: 'room', roomId })) throw notFound('Room')
  }

  return {
    async move (actor: Actor, input: unknown): Promise<void> {
      const { roomId, x, y } = parseInput(CursorMoveInput, input)
      await requireVisibleRoom(actor.userId, roomId)
      feed.move({ userId: actor.userId, roomId, x, y })
    },

    async leave (actor: Actor, input: unknown): Promise<void> {
      const { roomId } = parseInput(CursorLeaveInput, input)
      await requireVisibleRoom(actor.userId, roomId)
      feed.leave(actor.userId, roomId)
    }
  }
}

export type Cursors = ReturnType<typeof createCursors>
