// Who is active on which canvas, and the coalescing of cursor traffic (DECISIONS §7).
//
// Cursors are ephemeral: never stored. Every instance relays what its clients report to every
// instance (itself included: one path) as small batches — each sender keeps only the newest report
// per (room, user) and sends at most one message per RELAY_EVERY_MS, so a busy canvas costs a
// bounded number of notifications. Each instance replays those batches into the same state:
//   - `active`: (user, room) pairs with a recent position, so any instance can tell that a user
//     whose last stream closed was on a canvas and must produce `cursor:left`;
//   - `pending`: the newest position of each user per room since the last delivery, handed on at
//     most once per room per CURSOR_BATCH_MS (the `cursors:batch-updated` message).
// A leave is handed on at once, and drops the user's pending position in that room, so a batch
// never shows a cursor after its `cursor:left`.
import type { CursorPosition } from '../core/canvas/canvas.types.js'
import type { Logger } from '../infra/logger.js'
import type { CursorFeed } from '../core/cursors/cursors.types.js'
import { logThrottled } from '../infra/throttled-log.js'

export const CURSOR_BATCH_MS = 100
const RELAY_EVERY_MS = 50
/** A cursor unmoved this long is dropped (its watchers get `cursor:left`), so state cannot pile up. */
const IDLE_MS = 10 * 60_000
const SWEEP_EVERY_MS = 60_000
/** Relay messages stay well below NOTIFY's 8000 bytes. */
const MAX_MESSAGE_CHARS = 6_000
/**
 * At most this many cursors in one room's batch (DECISIONS §17: no event grows with the square of
 * anything). Each recipient with a cursor of its own gets a copy without it (cursor-fanout.ts), so an
 * uncapped batch in a room of n active users cost n copies of n cursors every CURSOR_BATCH_MS. The
 * rest wait for the next batch, those waiting longest first: in a crowd every cursor still moves,
 * each a little less often.
 */
export const MAX_CURSORS_PER_BATCH = 100

export interface CursorRelay {
  send (body: string): Promise<void>
  listen (handler: (body: string) => void): void
}

export interface CursorPresence extends CursorFeed {
  /** The user has no open stream left anywhere: they leave every canvas they were active on. */
  userGone (userId: string): void
  onBatch (handler: (roomId: string, cursors: CursorPosition[]) => void): void
  onLeft (handler: (roomId: string, userId: string) => void): void
  stop (): void
}

type Move = [roomId: string, userId: string, x: number, y: number]
type Leave = [roomId: string, userId: string]

function parseBatch (body: string): { moves: Move[], leaves: Leave[] } | undefined {
  let value: unknown
  try {
    value = JSON.parse(body)
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null) return undefined
  const { m, l } = value as { m?: unknown, l?: unknown }
  const isMove = (item: unknown): item is Move => Array.isArray(item) && item.length === 4 &&
    typeof item[0] === 'string' && typeof item[1] === 'string' && Number.isFinite(item[2]) && Number.isFinite(item[3])
  const isLeave = (item: unknown): item is Leave => Array.isArray(item) && item.length === 2 && typeof item[0] === 'string' && typeof item[1] === 'string'
  return {
    moves: Array.isArray(m) ? m.filter(isMove) : [],
    leaves: Array.isArray(l) ? l.filter(isLeave) : []
  }
}

export function createCursorPresence (relay: CursorRelay, log: Logger, now: () => number = Date.now): CursorPresence {
  /** Outgoing reports since the last relay, newest per (room, user); null marks a leave. */
  const outbox = new Map<string, { roomId: string, userId: string, at: { x: number, y: number } | null }>()
  const active = new Map<string, Map<string, number>>() // user → room → last move time
  const pending = new Map<string, Map<string, CursorPosition>>() // room → user → newest position
  const batchHandlers: Array<(roomId: string, cursors: CursorPosition[]) => void> = []
  const leftHandlers: Array<(roomId: string, userId: string) => void> = []
  let relayTimer: NodeJS.Timeout | undefined
  let deliverTimer: NodeJS.Timeout | undefined
  let stopped = false

  function queue (roomId: string, userId: string, at: { x: number, y: number } | null): void {
    if (stopped) return
    outbox.set(`${roomId}\n${userId}`, { roomId, userId, at })
    relayTimer ??= setTimeout(relayOutbox, RELAY_EVERY_MS)
  }

  function relayOutbox (): void {
    relayTimer = undefined
    const messages: string[] = []
    let moves: Move[] = []
    let leaves: Leave[] = []
    let size = 0
    const cut = (): void => {
      if (moves.length + leaves.length > 0) messages.push(JSON.stringify({ m: moves, l: leaves }))
      moves = []
      leaves = []
      size = 0
    }
    for (const { roomId, userId, at } of outbox.values()) {
      const itemSize = roomId.length + userId.length + 48
      if (size + itemSize > MAX_MESSAGE_CHARS) cut()
      if (at === null) leaves.push([roomId, userId])
      else moves.push([roomId, userId, at.x, at.y])
      size += itemSize
    }
    cut()
    outbox.clear()
    for (const message of messages) {
      relay.send(message).catch((error: unknown) => { logThrottled(log, 'warn', 'cursor relay failed; positions dropped', { err: error }) })
    }
  }

  function emitLeft (roomId: string, userId: string): void {
    for (const handler of leftHandlers) handler(roomId, userId)
  }

  function forget (userId: string, roomId: string): boolean {
    const rooms = active.get(userId)
    const was = rooms?.delete(roomId) ?? false
    if (rooms?.size === 0) active.delete(userId)
    const waiting = pending.get(roomId)
    waiting?.delete(userId)
    if (waiting?.size === 0) pending.delete(roomId)
    return was
  }

  function deliverPending (): void {
    deliverTimer = undefined
    const batches: Array<[string, CursorPosition[]]> = []
    for (const [roomId, byUser] of pending) {
      // A user's newer position replaces theirs in place (Map order), so the first are those waiting longest.
      const cursors: CursorPosition[] = []
      for (const [userId, cursor] of byUser) {
        if (cursors.length === MAX_CURSORS_PER_BATCH) break
        cursors.push(cursor)
        byUser.delete(userId)
      }
      if (byUser.size === 0) pending.delete(roomId)
      batches.push([roomId, cursors])
    }
    if (pending.size > 0) deliverTimer = setTimeout(deliverPending, CURSOR_BATCH_MS)
    for (const [roomId, cursors] of batches) {
      for (const handler of batchHandlers) handler(roomId, cursors)
    }
  }

  relay.listen((body) => {
    if (stopped) return
    const batch = parseBatch(body)
    if (batch === undefined) return
    const at = now()
    for (const [roomId, userId, x, y] of batch.moves) {
      let rooms = active.get(userId)
      if (rooms === undefined) active.set(userId, rooms = new Map())
      rooms.set(roomId, at)
      let waiting = pending.get(roomId)
      if (waiting === undefined) pending.set(roomId, waiting = new Map())
      waiting.set(userId, { userId, roomId, x, y })
    }
    for (const [roomId, userId] of batch.leaves) {
      if (forget(userId, roomId)) emitLeft(roomId, userId)
    }
    if (pending.size > 0) deliverTimer ??= setTimeout(deliverPending, CURSOR_BATCH_MS)
  })

  const sweeper = setInterval(() => {
    const cutoff = now() - IDLE_MS
    for (const [userId, rooms] of [...active]) {
      for (const [roomId, lastMove] of [...rooms]) {
        if (lastMove < cutoff && forget(userId, roomId)) emitLeft(roomId, userId)
      }
    }
  }, SWEEP_EVERY_MS)
  sweeper.unref()

  return {
    move: ({ userId, roomId, x, y }) => { queue(roomId, userId, { x, y }) },
    leave: (userId, roomId) => { queue(roomId, userId, null) },
    userGone (userId) {
      const rooms = new Set(active.get(userId)?.keys())
      // Reports not relayed yet count too: they would make the user active after they left.
      for (const entry of outbox.values()) if (entry.userId === userId) rooms.add(entry.roomId)
      for (const roomId of rooms) queue(roomId, userId, null)
    },
    onBatch: (handler) => { batchHandlers.push(handler) },
    onLeft: (handler) => { leftHandlers.push(handler) },
    stop () {
      stopped = true
      clearInterval(sweeper)
      if (relayTimer !== undefined) clearTimeout(relayTimer)
      if (deliverTimer !== undefined) clearTimeout(deliverTimer)
    }
  }
}
