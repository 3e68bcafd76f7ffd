// Who is present on which canvas, and the coalescing of cursor traffic (DECISIONS §7, §17 "Presence").
//
// Cursors and presence are ephemeral: never stored. Every instance relays what its clients report to
// every instance (itself included: one path) as small batches — each sender keeps only the newest
// report per (room, user) and sends at most one message per RELAY_EVERY_MS, so a busy canvas costs a
// bounded number of notifications. Each instance replays those batches, in the one order the channel
// delivers them everywhere, into the same state:
//   - `presence`: (user, room) pairs with a recent report — a cursor position or a presence report
//     without one — each with when it began (`since`) and the latest report (`lastActiveAt`). It is
//     what GetPresence answers, and how any instance can tell that a user whose last stream closed
//     was on a canvas and must produce `cursor:left` and `presence:left`. A pair that appears is
//     announced (`onJoined`), a pair that goes (leave, last stream closed, IDLE_MS without a report)
//     too (`onLeft`), so every joined has its left;
//   - `pending`: the newest position of each user per room since the last delivery, handed on at
//     most once per room per CURSOR_BATCH_MS (the `cursors:batch-updated` message).
// A leave is handed on at once, and drops the user's pending position in that room, so a batch
// never shows a cursor after its `cursor:left`.
//
// An instance that starts (or whose listening connection came back, having missed messages) knows
// nobody: it asks (`resync`), and every other instance answers with the presence it holds, addressed
// to the asker, within one trip through the channel. The asker merges the answers (the earliest
// `since`, the latest `lastActiveAt`), except for pairs it saw leave after it asked (an answer may
// have been written before that leave) and answers older than SYNC_ANSWER_MS. Until the answers
// arrive its GetPresence may miss users; one who is present reappears at their next report anyway.
import { randomUUID } from 'node:crypto'
import type { CursorPosition } from '../core/canvas/canvas.types.js'
import type { Logger } from '../infra/logger.js'
import type { CursorFeed } from '../core/cursors/cursors.types.js'
import type { PresenceBoard, PresenceRecord } from '../core/presence/presence.types.js'
import { logThrottled } from '../infra/throttled-log.js'

export const CURSOR_BATCH_MS = 100
const RELAY_EVERY_MS = 50
/** A presence without a report this long is dropped (its watchers get `cursor:left`), so state cannot pile up. */
export const IDLE_MS = 10 * 60_000
const SWEEP_EVERY_MS = 60_000
/** Answers to a resync later than this are stale: ignored (what they list has been reported since, or left). */
export const SYNC_ANSWER_MS = 30_000
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

export interface CursorPresence extends CursorFeed, PresenceBoard {
  /** The user has no open stream left anywhere: they leave every canvas they were present on. */
  userGone (userId: string): void
  /** Asks the other instances for the presence they hold (this one starts, or missed messages). */
  resync (): void
  onBatch (handler: (roomId: string, cursors: CursorPosition[]) => void): void
  /** A user became present in a room (on this instance's view: every instance announces it). */
  onJoined (handler: (roomId: string, presence: PresenceRecord) => void): void
  onLeft (handler: (roomId: string, userId: string) => void): void
  stop (): void
}

type Move = [roomId: string, userId: string, x: number, y: number]
type Leave = [roomId: string, userId: string]
type Here = [roomId: string, userId: string]
type Held = [roomId: string, userId: string, since: number, lastActiveAt: number]

/**
 * The relay's messages: `{m, l, p}` reports (moves, leaves, presence without a cursor); `{q}` a
 * resync request naming its instance; `{a, s}` an answer to that instance with what the sender holds.
 */
interface Relayed {
  moves: Move[]
  leaves: Leave[]
  here: Here[]
  request: string | undefined
  answerTo: string | undefined
  held: Held[]
}

const isPair = (item: unknown): item is [string, string] => Array.isArray(item) && item.length === 2 && typeof item[0] === 'string' && typeof item[1] === 'string'
const isMove = (item: unknown): item is Move => Array.isArray(item) && item.length === 4 &&
  typeof item[0] === 'string' && typeof item[1] === 'string' && Number.isFinite(item[2]) && Number.isFinite(item[3])
const isHeld = isMove as (item: unknown) => item is Held

function parseRelayed (body: string): Relayed | undefined {
  let value: unknown
  try {
    value = JSON.parse(body)
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null) return undefined
  const { m, l, p, q, a, s } = value as { m?: unknown, l?: unknown, p?: unknown, q?: unknown, a?: unknown, s?: unknown }
  return {
    moves: Array.isArray(m) ? m.filter(isMove) : [],
    leaves: Array.isArray(l) ? l.filter(isPair) : [],
    here: Array.isArray(p) ? p.filter(isPair) : [],
    request: typeof q === 'string' ? q : undefined,
    answerTo: typeof a === 'string' ? a : undefined,
    held: Array.isArray(s) ? s.filter(isHeld) : []
  }
}

/** A report waiting to be relayed: a position, presence without one, or a leave. */
type Report = { x: number, y: number } | 'here' | 'left'

interface Presence { since: number, lastActiveAt: number }

export function createCursorPresence (relay: CursorRelay, log: Logger, now: () => number = Date.now): CursorPresence {
  const instanceId = randomUUID()
  /** Outgoing reports since the last relay, newest per (room, user). */
  const outbox = new Map<string, { roomId: string, userId: string, report: Report }>()
  // The same records, indexed both ways: by user (a user who is gone leaves every room) and by room
  // in the order they joined (what GetPresence lists).
  const byUser = new Map<string, Map<string, Presence>>() // user → room → presence
  const byRoom = new Map<string, Map<string, Presence>>() // room → user → presence
  const pending = new Map<string, Map<string, CursorPosition>>() // room → user → newest position
  const batchHandlers: Array<(roomId: string, cursors: CursorPosition[]) => void> = []
  const joinedHandlers: Array<(roomId: string, presence: PresenceRecord) => void> = []
  const leftHandlers: Array<(roomId: string, userId: string) => void> = []
  /** While answers to this instance's resync may come: until when, and the pairs seen leaving since it asked. */
  let syncing: { until: number, left: Set<string> } | undefined
  let relayTimer: NodeJS.Timeout | undefined
  let sending: Promise<void> = Promise.resolve()
  let deliverTimer: NodeJS.Timeout | undefined
  let stopped = false

  const keyOf = (roomId: string, userId: string): string => `${roomId}\n${userId}`

  function queue (roomId: string, userId: string, report: Report): void {
    if (stopped) return
    const key = keyOf(roomId, userId)
    // A position waiting to go says "present" already, and more.
    if (report === 'here' && typeof outbox.get(key)?.report === 'object') return
    outbox.set(key, { roomId, userId, report })
    relayTimer ??= setTimeout(relayOutbox, RELAY_EVERY_MS)
  }

  // One relay message at a time: two NOTIFYs in flight on two connections may commit in either
  // order, and an older position arriving last would be the one delivered.
  function send (message: string): void {
    sending = sending.then(async () => { await relay.send(message) }).catch((error: unknown) => { logThrottled(log, 'warn', 'cursor relay failed; positions dropped', { err: error }) })
  }

  /** Items in messages of at most MAX_MESSAGE_CHARS (each item's size estimated generously). */
  function inMessages<T> (items: Iterable<T>, sizeOf: (item: T) => number, write: (chunk: T[]) => string): void {
    let chunk: T[] = []
    let size = 0
    for (const item of items) {
      const itemSize = sizeOf(item)
      if (size + itemSize > MAX_MESSAGE_CHARS && chunk.length > 0) {
        send(write(chunk))
        chunk = []
        size = 0
      }
      chunk.push(item)
      size += itemSize
    }
    if (chunk.length > 0) send(write(chunk))
  }

  function relayOutbox (): void {
    relayTimer = undefined
    const entries = [...outbox.values()]
    outbox.clear()
    inMessages(entries, ({ roomId, userId }) => roomId.length + userId.length + 48, (chunk) => {
      const m: Move[] = []
      const l: Leave[] = []
      const p: Here[] = []
      for (const { roomId, userId, report } of chunk) {
        if (report === 'left') l.push([roomId, userId])
        else if (report === 'here') p.push([roomId, userId])
        else m.push([roomId, userId, report.x, report.y])
      }
      return JSON.stringify({ m, l, p })
    })
  }

  /** Tells every other instance what this one holds (an answer to `to`'s resync). */
  function answer (to: string): void {
    const held: Held[] = []
    for (const [roomId, users] of byRoom) {
      for (const [userId, { since, lastActiveAt }] of users) held.push([roomId, userId, since, lastActiveAt])
    }
    inMessages(held, ([roomId, userId]) => roomId.length + userId.length + 48, (chunk) => JSON.stringify({ a: to, s: chunk }))
  }

  /** The user is present in the room from `since`, last active at `lastActiveAt`: a new pair is announced. */
  function markPresent (roomId: string, userId: string, since: number, lastActiveAt: number): void {
    const known = byRoom.get(roomId)?.get(userId)
    if (known !== undefined) {
      known.since = Math.min(known.since, since)
      known.lastActiveAt = Math.max(known.lastActiveAt, lastActiveAt)
      return
    }
    const presence: Presence = { since, lastActiveAt }
    let rooms = byUser.get(userId)
    if (rooms === undefined) byUser.set(userId, rooms = new Map())
    rooms.set(roomId, presence)
    let users = byRoom.get(roomId)
    if (users === undefined) byRoom.set(roomId, users = new Map())
    users.set(userId, presence)
    for (const handler of joinedHandlers) handler(roomId, { userId, since, lastActiveAt })
  }

  function emitLeft (roomId: string, userId: string): void {
    for (const handler of leftHandlers) handler(roomId, userId)
  }

  function forget (userId: string, roomId: string): boolean {
    const rooms = byUser.get(userId)
    const was = rooms?.delete(roomId) ?? false
    if (rooms?.size === 0) byUser.delete(userId)
    const users = byRoom.get(roomId)
    users?.delete(userId)
    if (users?.size === 0) byRoom.delete(roomId)
    const waiting = pending.get(roomId)
    waiting?.delete(userId)
    if (waiting?.size === 0) pending.delete(roomId)
    return was
  }

  function deliverPending (): void {
    deliverTimer = undefined
    const batches: Array<[string, CursorPosition[]]> = []
    for (const [roomId, byUserInRoom] of pending) {
      // A user's newer position replaces theirs in place (Map order), so the first are those waiting longest.
      const cursors: CursorPosition[] = []
      for (const [userId, cursor] of byUserInRoom) {
        if (cursors.length === MAX_CURSORS_PER_BATCH) break
        cursors.push(cursor)
        byUserInRoom.delete(userId)
      }
      if (byUserInRoom.size === 0) pending.delete(roomId)
      batches.push([roomId, cursors])
    }
    if (pending.size > 0) deliverTimer = setTimeout(deliverPending, CURSOR_BATCH_MS)
    for (const [roomId, cursors] of batches) {
      for (const handler of batchHandlers) handler(roomId, cursors)
    }
  }

  relay.listen((body) => {
    if (stopped) return
    const relayed = parseRelayed(body)
    if (relayed === undefined) return
    const at = now()
    if (relayed.request !== undefined && relayed.request !== instanceId) answer(relayed.request)
    if (relayed.answerTo === instanceId && syncing !== undefined && at <= syncing.until) {
      for (const [roomId, userId, since, lastActiveAt] of relayed.held) {
        if (syncing.left.has(keyOf(roomId, userId)) || lastActiveAt < at - IDLE_MS) continue
        markPresent(roomId, userId, since, Math.min(lastActiveAt, at))
      }
    }
    for (const [roomId, userId, x, y] of relayed.moves) {
      markPresent(roomId, userId, at, at)
      let waiting = pending.get(roomId)
      if (waiting === undefined) pending.set(roomId, waiting = new Map())
      waiting.set(userId, { userId, roomId, x, y })
    }
    for (const [roomId, userId] of relayed.here) markPresent(roomId, userId, at, at)
    for (const [roomId, userId] of relayed.leaves) {
      if (syncing !== undefined && at <= syncing.until) syncing.left.add(keyOf(roomId, userId))
      if (forget(userId, roomId)) emitLeft(roomId, userId)
    }
    if (pending.size > 0) deliverTimer ??= setTimeout(deliverPending, CURSOR_BATCH_MS)
  })

  const sweeper = setInterval(() => {
    const cutoff = now() - IDLE_MS
    for (const [userId, rooms] of [...byUser]) {
      for (const [roomId, presence] of [...rooms]) {
        if (presence.lastActiveAt < cutoff && forget(userId, roomId)) emitLeft(roomId, userId)
      }
    }
    if (syncing !== undefined && now() > syncing.until) syncing = undefined
  }, SWEEP_EVERY_MS)
  sweeper.unref()

  return {
    move: ({ userId, roomId, x, y }) => { queue(roomId, userId, { x, y }) },
    leave: (userId, roomId) => { queue(roomId, userId, 'left') },
    present: (userId, roomId) => { queue(roomId, userId, 'here') },
    presentIn (roomId) {
      const records: PresenceRecord[] = []
      for (const [userId, { since, lastActiveAt }] of byRoom.get(roomId) ?? []) records.push({ userId, since, lastActiveAt })
      // Mostly in order already (joining order); answers merged after a resync may not be. Stable.
      return records.sort((a, b) => a.since - b.since)
    },
    userGone (userId) {
      const rooms = new Set(byUser.get(userId)?.keys())
      // Reports not relayed yet count too: they would make the user present after they left.
      for (const entry of outbox.values()) if (entry.userId === userId) rooms.add(entry.roomId)
      for (const roomId of rooms) queue(roomId, userId, 'left')
    },
    resync () {
      if (stopped) return
      syncing = { until: now() + SYNC_ANSWER_MS, left: new Set() }
      send(JSON.stringify({ q: instanceId }))
    },
    onBatch: (handler) => { batchHandlers.push(handler) },
    onJoined: (handler) => { joinedHandlers.push(handler) },
    onLeft: (handler) => { leftHandlers.push(handler) },
    stop () {
      stopped = true
      clearInterval(sweeper)
      if (relayTimer !== undefined) clearTimeout(relayTimer)
      if (deliverTimer !== undefined) clearTimeout(deliverTimer)
    }
  }
}
