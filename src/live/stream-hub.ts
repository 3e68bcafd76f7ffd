// The open event streams of this instance: opening one (with replay when it names Last-Event-ID),
// closing it, and ending them all at shutdown. Transport-free: a stream is a StreamConnection (send a
// message, end) that the SSE route provides. The work is done by units named for their job:
// event-fanout.ts (committed events to the streams that may see them), replay.ts (what a reconnecting
// client missed), cursor-fanout.ts (cursor batches and leaves) and stream-upkeep.ts (heartbeats, slot
// refreshes, ending streams whose session ended).
import type { AudienceResolver } from '../core/audience.js'
import type { Db } from '../db/database.js'
import type { Clock } from '../infra/clock.js'
import type { Logger } from '../infra/logger.js'
import type { Slot } from '../infra/stream-slots.js'
import { fanOutCursors } from './cursor-fanout.js'
import type { CursorPresence } from './cursor-presence.js'
import type { EventLogBus } from './event-log-bus.js'
import { fanOutEvents } from './event-fanout.js'
import type { LiveChannel } from './live-channel.js'
import { formatPosition, LOG_START } from './log-position.js'
import { replayMissed, resetMessage } from './replay.js'
import type { StreamCaps } from './stream-caps.js'
import { keepStreamsUp } from './stream-upkeep.js'
import { OpenStreams, type Stream, type StreamConnection } from './streams.js'
import { logThrottled } from '../infra/throttled-log.js'

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

export interface StreamHubOptions {
  /** Session checks (the delivery path's own connections). */
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

export function createStreamHub (options: StreamHubOptions): StreamHub {
  const { bus, audience, presence, caps, clock, log } = options
  const streams = new OpenStreams()
  let closing = false

  function detach (stream: Stream, afterShutdown: boolean): void {
    if (stream.closed) return
    stream.closed = true
    stream.buffer = undefined
    streams.remove(stream)
    if (stream.expiryTimer !== undefined) clearTimeout(stream.expiryTimer)
    caps.release(stream.slot)
    if (afterShutdown || streams.hasUser(stream.userId)) return
    // The user's last stream here; if it was their last anywhere, they leave every canvas.
    caps.openStreams(stream.userId).then((open) => {
      if (open === 0 && !streams.hasUser(stream.userId)) presence.userGone(stream.userId)
    }, (error: unknown) => { logThrottled(log, 'warn', 'live events: counting open streams failed', { err: error }) })
  }

  function end (stream: Stream): void {
    if (stream.closed) return
    try {
      stream.connection.end()
    } finally {
      detach(stream, false)
    }
  }

  const events = fanOutEvents({ bus, audience, streams, log })
  // The log went back in time: what the streams were sent after its newest event no longer exists,
  // and later events will reuse those positions. Each stream is told to refetch and starts over from
  // the log's newest position (one being replayed is ended instead: its client reconnects and is reset).
  bus.onRewind((from, to) => {
    const message = resetMessage('rewound', formatPosition(from), to, clock)
    for (const stream of streams.list()) {
      stream.floor = LOG_START
      if (stream.buffer !== undefined) end(stream)
      else stream.connection.send(message)
    }
  })
  fanOutCursors({ presence, audience, streams, clock, log })
  const upkeep = keepStreamsUp({ ...options, streams, end })

  return {
    open (connection, { userId, sessionId, expiresAt, slot, lastEventId }) {
      if (closing) {
        caps.release(slot)
        connection.end()
        return { close: () => {} }
      }
      const stream: Stream = {
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
      streams.add(stream)
      upkeep.watchExpiry(stream)
      if (lastEventId !== undefined && !stream.closed) {
        replayMissed(stream, lastEventId, { bus, audience, clock }).catch((error: unknown) => {
          logThrottled(log, 'error', 'live events: replay failed; ending the stream so the client reconnects', { err: error })
          end(stream)
        })
      }
      return { close: () => { detach(stream, false) } }
    },

    closeAll () {
      closing = true
      for (const stream of streams.list()) {
        try {
          stream.connection.end()
        } finally {
          detach(stream, true)
        }
      }
    },

    stop () {
      closing = true
      upkeep.stop()
      events.stop()
    },

    get size () { return streams.size }
  }
}
