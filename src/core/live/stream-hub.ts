// The open event streams of this instance and what reaches each of them. Transport-free: a stream is
// a StreamConnection (send a message, end) that the SSE route provides.
//
// - Events come from the bus in log order; who receives one is asked of the audience resolver
//   (the core's rule, DECISIONS §5/§7) once per event per instance when it is delivered, and it is
//   written to this instance's streams of those users. Cursor events never reach their own user.
// - Replay: a stream opened with Last-Event-ID first buffers live events, then is sent the missed
//   events it may see now, in order, then the buffer minus what replay already covered.
// - Cursors: coalesced batches and leaves from CursorPresence, to the room's visible members.
// - Heartbeats, stream cap slot refreshes and a session check run on one timer for all streams;
//   a stream ends when its session ends (signal from any instance), is found revoked or expires.
import type { Clock } from '../../infra/clock.js'
import type { Slot } from '../../infra/stream-slots.js'
import type { AudienceResolver } from '../audience.js'
import type { CursorPosition } from '../canvas/canvas.types.js'
import type { CursorPresence } from '../cursors/cursor-presence.js'
import type { Db } from '../../db/database.js'
import type { Logger } from '../deps.js'
import type { Audience } from '../events.js'
import type { EventLogBus, LoggedEvent } from './event-log-bus.js'
import { comparePositions, formatPosition, LOG_START, parsePosition, type LogPosition } from './log-position.js'
import type { LiveChannel } from './live-channel.js'
import type { StreamCaps } from './stream-caps.js'
import { standingSessionIds } from './stream-sessions.repository.js'

/** More missed events than this and a reconnecting client is told to refetch instead (`sync:reset`). */
export const MAX_REPLAY_EVENTS = 5_000
const REPLAY_PAGE = 500
/** The session check runs on heartbeats, but not more often than this. */
const SESSION_CHECK_EVERY_MS = 10_000
const MAX_TIMER_MS = 2 ** 31 - 1
const RESOLVE_RETRY_FIRST_MS = 100
const RESOLVE_RETRY_MAX_MS = 2_000

/** One SSE message: `data` is the JSON envelope; `event` names a non-default type (heartbeat). */
export interface StreamMessage {
  readonly id?: string
  readonly event?: string
  readonly data: object
}

/** Why a reconnecting client gets `sync:reset` instead of a replay. */
export type ResetReason = 'expired' | 'unknown-id' | 'too-many'

export interface StreamConnection {
  /** Writes one message; the same object goes to many streams, so it may be encoded once. */
  send (message: StreamMessage): void
  /** Ends the response (server side). */
  end (): void
}

export interface StreamOpen {
  userId: string
  sessionId: string
  /** When the credential the stream was opened with stops being valid. */
  expiresAt?: Date | undefined
  slot: Slot
  /** The client's Last-Event-ID header, when it sent one. */
  lastEventId?: string | undefined
}

export interface StreamHandle {
  /** The client went away: frees everything the stream held. Idempotent. */
  close (): void
}

export interface StreamHub {
  open (connection: StreamConnection, options: StreamOpen): StreamHandle
  /** Graceful shutdown: ends every stream. */
  closeAll (): void
  stop (): void
  readonly size: number
}

interface Subscriber {
  readonly connection: StreamConnection
  readonly userId: string
  readonly sessionId: string
  readonly slot: Slot
  readonly expiresAt: number | undefined
  expiryTimer: NodeJS.Timeout | undefined
  /** Set while a replay runs: live events wait here. */
  buffer: Array<{ position: LogPosition, message: StreamMessage }> | undefined
  /** After a replay: the log id it covered. A live event at or below it (one committed before the
   *  stream opened but handed over late) was already replayed or deliberately skipped. */
  floor: LogPosition
  closed: boolean
}

export interface StreamHubOptions {
  db: Db
  bus: EventLogBus
  channel: LiveChannel
  audience: AudienceResolver
  presence: CursorPresence
  caps: StreamCaps
  clock: Clock
  log: Logger
  heartbeatMs: number
}

const audienceKey = (audience: Audience): string =>
  audience.kind === 'room' ? `r:${audience.roomId}` : `u:${[...audience.userIds].sort().join(',')}`

/** The SPEC envelope; the internal audience never leaves the server. */
function messageOf (event: LoggedEvent): StreamMessage {
  const data = { type: event.type, payload: event.payload, timestamp: event.timestamp, ...(event.userId === undefined ? {} : { userId: event.userId }) }
  return { id: event.id, data }
}

/** Cursor events are never delivered to the user whose cursor they are (DECISIONS §7). */
function cursorOwnerOf (event: LoggedEvent): string | undefined {
  return event.type.startsWith('cursor') ? event.userId : undefined
}

export function createStreamHub (options: StreamHubOptions): StreamHub {
  const { db, bus, channel, audience, presence, caps, clock, log, heartbeatMs } = options
  const all = new Set<Subscriber>()
  const byUser = new Map<string, Set<Subscriber>>()
  const bySession = new Map<string, Set<Subscriber>>()
  let closing = false
  let stopped = false
  let queue: LoggedEvent[] = []
  let flushQueued = false
  let eventChain: Promise<void> = Promise.resolve()
  let cursorChain: Promise<void> = Promise.resolve()
  let lastSessionCheck = 0
  let sessionCheckRunning = false

  const index = <K>(map: Map<K, Set<Subscriber>>, key: K, sub: Subscriber): void => {
    let set = map.get(key)
    if (set === undefined) map.set(key, set = new Set())
    set.add(sub)
  }
  const unindex = <K>(map: Map<K, Set<Subscriber>>, key: K, sub: Subscriber): void => {
    const set = map.get(key)
    set?.delete(sub)
    if (set?.size === 0) map.delete(key)
  }

  /** Calls `visit` for each local stream of a user in `recipients`, walking the smaller side. */
  function forEachRecipientStream (recipients: ReadonlySet<string>, visit: (sub: Subscriber) => void): void {
    if (recipients.size <= byUser.size) {
      for (const userId of recipients) byUser.get(userId)?.forEach(visit)
    } else {
      for (const [userId, subs] of byUser) if (recipients.has(userId)) subs.forEach(visit)
    }
  }

  function deliver (event: LoggedEvent, recipients: ReadonlySet<string>): void {
    const message = messageOf(event)
    const owner = cursorOwnerOf(event)
    forEachRecipientStream(recipients, (sub) => {
      if (sub.userId === owner || comparePositions(event.position, sub.floor) <= 0) return
      if (sub.buffer !== undefined) sub.buffer.push({ position: event.position, message })
      else sub.connection.send(message)
    })
  }

  // Events handed over in one go by the bus were all committed before they were loaded, so one
  // resolution per distinct audience, started now, is "at the moment of delivery" for each of them.
  function flush (): void {
    flushQueued = false
    const batch = queue
    queue = []
    const resolutions = new Map<string, Promise<ReadonlySet<string>>>()
    const items = batch.map((event) => {
      const key = audienceKey(event.audience)
      let recipients = resolutions.get(key)
      if (recipients === undefined) {
        recipients = audience.recipientsOf(event.audience)
        recipients.catch(() => {}) // reported where it is awaited
        resolutions.set(key, recipients)
      }
      return { event, recipients }
    })
    eventChain = eventChain.then(async () => {
      for (const { event, recipients } of items) {
        const resolved = await recipientsOf(event, recipients)
        if (resolved !== undefined) deliver(event, resolved)
      }
    })
  }

  /**
   * The recipients of an event, asked again (with a growing pause) while the database cannot answer:
   * an event is never dropped for a passing fault, and the ones after it wait their turn, so the
   * order holds. Undefined only once the hub has stopped.
   */
  async function recipientsOf (event: LoggedEvent, first: Promise<ReadonlySet<string>>): Promise<ReadonlySet<string> | undefined> {
    let attempt = first
    let pauseMs = RESOLVE_RETRY_FIRST_MS
    for (;;) {
      try {
        return await attempt
      } catch (error) {
        if (stopped) return undefined
        log.warn({ err: error, eventId: event.id, type: event.type }, 'live events: resolving recipients failed; asking again')
        await new Promise((resolve) => setTimeout(resolve, pauseMs))
        pauseMs = Math.min(pauseMs * 2, RESOLVE_RETRY_MAX_MS)
        attempt = audience.recipientsOf(event.audience)
      }
    }
  }

  const unfollow = bus.follow((event) => {
    if (all.size === 0) return
    queue.push(event)
    if (!flushQueued) {
      flushQueued = true
      queueMicrotask(flush)
    }
  })

  function deliverToRoom (roomId: string, build: (sub: Subscriber) => StreamMessage | undefined): void {
    if (all.size === 0) return
    const recipients = audience.recipientsOf({ kind: 'room', roomId })
    recipients.catch(() => {})
    // Chained, so a batch never overtakes the leave that followed it.
    cursorChain = cursorChain.then(async () => {
      try {
        forEachRecipientStream(await recipients, (sub) => {
          const message = build(sub)
          if (message !== undefined) sub.connection.send(message)
        })
      } catch (error) {
        log.error({ err: error, roomId }, 'live events: resolving cursor recipients failed')
      }
    })
  }

  presence.onBatch((roomId, cursors) => {
    const timestamp = clock.now().toISOString()
    const everyone: StreamMessage = { data: { type: 'cursors:batch-updated', payload: { cursors }, timestamp } }
    const withoutOwn = new Map<string, StreamMessage | undefined>()
    deliverToRoom(roomId, (sub) => {
      if (!cursors.some((c) => c.userId === sub.userId)) return everyone
      if (!withoutOwn.has(sub.userId)) {
        const others: CursorPosition[] = cursors.filter((c) => c.userId !== sub.userId)
        withoutOwn.set(sub.userId, others.length === 0 ? undefined : { data: { type: 'cursors:batch-updated', payload: { cursors: others }, timestamp } })
      }
      return withoutOwn.get(sub.userId)
    })
  })

  presence.onLeft((roomId, userId) => {
    const message: StreamMessage = { data: { type: 'cursor:left', payload: { userId, roomId }, timestamp: clock.now().toISOString(), userId } }
    deliverToRoom(roomId, (sub) => sub.userId === userId ? undefined : message)
  })

  function detach (sub: Subscriber, afterShutdown: boolean): void {
    if (sub.closed) return
    sub.closed = true
    sub.buffer = undefined
    all.delete(sub)
    unindex(byUser, sub.userId, sub)
    unindex(bySession, sub.sessionId, sub)
    if (sub.expiryTimer !== undefined) clearTimeout(sub.expiryTimer)
    caps.release(sub.slot)
    if (afterShutdown || byUser.has(sub.userId)) return
    // The user's last stream here; if it was their last anywhere, they leave every canvas.
    caps.openStreams(sub.userId).then((open) => {
      if (open === 0 && !byUser.has(sub.userId)) presence.userGone(sub.userId)
    }, (error: unknown) => { log.warn({ err: error }, 'live events: counting open streams failed') })
  }

  function end (sub: Subscriber): void {
    if (sub.closed) return
    try {
      sub.connection.end()
    } finally {
      detach(sub, false)
    }
  }

  function armExpiry (sub: Subscriber, now: number): void {
    if (sub.expiresAt === undefined || sub.expiryTimer !== undefined) return
    const left = sub.expiresAt - now
    if (left <= 0) {
      end(sub)
      return
    }
    // Far expiries are re-checked on heartbeats; only the last stretch needs its own timer.
    if (left > heartbeatMs * 2) return
    sub.expiryTimer = setTimeout(() => { end(sub) }, Math.min(left, MAX_TIMER_MS))
  }

  function endAll (subs: Set<Subscriber> | undefined): void {
    for (const sub of [...subs ?? []]) end(sub)
  }

  channel.on('s', (sessionId) => { endAll(bySession.get(sessionId)) })
  channel.on('u', (userId) => { endAll(byUser.get(userId)) })

  async function checkSessions (): Promise<void> {
    if (sessionCheckRunning || bySession.size === 0) return
    sessionCheckRunning = true
    try {
      const ids = [...bySession.keys()]
      const standing = await standingSessionIds(db, ids, clock.now())
      for (const id of ids) if (!standing.has(id)) endAll(bySession.get(id))
    } catch (error) {
      log.warn({ err: error }, 'live events: session check failed')
    } finally {
      sessionCheckRunning = false
    }
  }

  const heartbeat = setInterval(() => {
    if (all.size === 0) return
    const now = clock.now()
    const message: StreamMessage = { event: 'heartbeat', data: { timestamp: now.toISOString() } }
    const slots: Slot[] = []
    for (const sub of [...all]) {
      sub.connection.send(message)
      slots.push(sub.slot)
      armExpiry(sub, now.getTime())
    }
    caps.refresh(slots)
    if (now.getTime() - lastSessionCheck >= SESSION_CHECK_EVERY_MS) {
      lastSessionCheck = now.getTime()
      void checkSessions()
    }
  }, heartbeatMs)
  heartbeat.unref()

  function resetMessage (reason: ResetReason, lastEventId: string, head: LogPosition): StreamMessage {
    return { id: formatPosition(head), data: { type: 'sync:reset', payload: { reason, lastEventId }, timestamp: clock.now().toISOString() } }
  }

  async function replay (sub: Subscriber, lastEventId: string): Promise<void> {
    const { newest, prunedThrough } = await bus.bounds()
    if (sub.closed) return
    const after = parsePosition(lastEventId)
    if (after === undefined || comparePositions(after, newest) > 0) {
      sub.connection.send(resetMessage('unknown-id', lastEventId, newest))
    } else if (comparePositions(after, prunedThrough) < 0) {
      sub.connection.send(resetMessage('expired', lastEventId, newest))
    } else if (await bus.countAfter(after, MAX_REPLAY_EVENTS + 1) > MAX_REPLAY_EVENTS) {
      sub.connection.send(resetMessage('too-many', lastEventId, newest))
    } else {
      // Everything final before this stream registered is at or before `newest`; later events are in the buffer.
      const visible = new Map<string, Promise<boolean>>()
      let from = after
      for (;;) {
        const page = await bus.readBetween(from, newest, REPLAY_PAGE)
        if (sub.closed) return
        for (const event of page) {
          const key = audienceKey(event.audience)
          let may = visible.get(key)
          if (may === undefined) visible.set(key, may = audience.canSee(sub.userId, event.audience))
          if (await may && cursorOwnerOf(event) !== sub.userId && !sub.closed) sub.connection.send(messageOf(event))
        }
        if (page.length < REPLAY_PAGE) break
        from = page[page.length - 1]?.position ?? newest
      }
    }
    if (sub.closed) return
    const waiting = sub.buffer ?? []
    sub.buffer = undefined
    sub.floor = newest
    for (const { position, message } of waiting) if (comparePositions(position, newest) > 0) sub.connection.send(message)
  }

  return {
    open (connection, { userId, sessionId, expiresAt, slot, lastEventId }) {
      const sub: Subscriber = {
        connection,
        userId,
        sessionId,
        slot,
        expiresAt: expiresAt?.getTime(),
        expiryTimer: undefined,
        buffer: lastEventId === undefined ? undefined : [],
        floor: LOG_START,
        closed: false
      }
      if (closing) {
        caps.release(slot)
        connection.end()
        return { close: () => {} }
      }
      all.add(sub)
      index(byUser, userId, sub)
      index(bySession, sessionId, sub)
      armExpiry(sub, clock.now().getTime())
      if (lastEventId !== undefined && !sub.closed) {
        replay(sub, lastEventId).catch((error: unknown) => {
          log.error({ err: error }, 'live events: replay failed; ending the stream so the client reconnects')
          end(sub)
        })
      }
      return { close: () => { detach(sub, false) } }
    },

    closeAll () {
      closing = true
      for (const sub of [...all]) {
        try {
          sub.connection.end()
        } finally {
          detach(sub, true)
        }
      }
    },

    stop () {
      closing = true
      stopped = true
      clearInterval(heartbeat)
      unfollow()
    },

    get size () { return all.size }
  }
}
