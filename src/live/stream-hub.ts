// The open event streams of this instance: opening one (with replay when it names Last-Event-ID),
// closing it, and ending them all at shutdown. Transport-free: a stream writes to a StreamTransport
// (bytes, end, abort) that the SSE route provides, paced by its outbox (stream-outbox.ts). The work is
// done by units named for their job: event-fanout.ts (committed events to the streams that may see
// them), replay.ts (what a reconnecting client missed, and catching up a stream that fell behind),
// cursor-fanout.ts (cursor batches, presence joins and leaves) and stream-upkeep.ts (heartbeats,
// slot refreshes, ending streams whose session ended).
import type { AudienceResolver } from '../core/audience.js'
import type { PresenceDirectory } from '../core/presence/presence-directory.js'
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
import { catchUp, replayMissed, resetMessage, type CatchUpReads } from './replay.js'
import type { StreamCaps } from './stream-caps.js'
import { StreamOutbox } from './stream-outbox.js'
import { keepStreamsUp } from './stream-upkeep.js'
import { OpenStreams, type Stream, type StreamTransport } from './streams.js'
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
  open (transport: StreamTransport, options: StreamOpen): StreamHandle
  /** Graceful shutdown: ends every stream. */
  closeAll (): void
  stop (): void
  readonly size: number
  /** How far behind their clients this instance's streams are (stream-outbox.ts). */
  pacing (): StreamPacing
}

export interface StreamPacing {
  /** Bytes held in memory for the streams (written and not taken, and queued): bounded per stream. */
  heldBytes: number
  /** Bytes the streams owe their clients: the held ones and those still to be read from the log. */
  waitingBytes: number
  /** Streams catching up from the log. */
  catchingUp: number
}

export interface StreamHubOptions {
  /** Session checks (the delivery path's own connections). */
  db: Db
  bus: EventLogBus
  channel: LiveChannel
  audience: AudienceResolver
  presence: CursorPresence
  /** Who a `presence:joined` shows (the core's rule on who may be shown). */
  people: PresenceDirectory
  caps: StreamCaps
  clock: Clock
  log: Logger
  heartbeatMs: number
  /** A client that takes nothing this long while at least 1 MiB waits for it is cut off (DECISIONS §17: 30 s). */
  stallMs: number
  /** Bounds the catch-up reads on the live read pool (live-connections.ts). */
  catchUpReads: CatchUpReads
}

export function createStreamHub (options: StreamHubOptions): StreamHub {
  const { bus, audience, presence, people, caps, clock, log, stallMs } = options
  const streams = new OpenStreams()
  let closing = false

  function detach (stream: Stream, afterShutdown: boolean): void {
    if (stream.closed) return
    stream.closed = true
    stream.outbox.close()
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
      stream.transport.end()
    } finally {
      detach(stream, false)
    }
  }

  function cut (stream: Stream, waitingBytes: number): void {
    if (stream.closed) return
    log.info({ userId: stream.userId, waitingBytes, stallMs }, 'live events: a stream\'s client took nothing while a megabyte waited for it; cutting it (it reconnects with Last-Event-ID)')
    try {
      stream.transport.abort()
    } finally {
      detach(stream, false)
    }
  }

  const catchUpOptions = { bus, audience, clock, reads: options.catchUpReads }
  function caughtUpOrEnded (stream: Stream, catching: Promise<void>): void {
    catching.catch((error: unknown) => {
      logThrottled(log, 'error', 'live events: catching a stream up failed; ending the stream so the client reconnects', { err: error })
      end(stream)
    })
  }

  const events = fanOutEvents({ bus, audience, streams, log })
  // The log went back in time: what the streams were sent after its newest event no longer exists,
  // and later events will reuse those positions. Each stream is told to refetch and starts over from
  // the log's newest position (one catching up or with events waiting is ended instead: its client
  // reconnects and is reset).
  bus.onRewind((from, to) => {
    const message = resetMessage('rewound', formatPosition(from), to, clock)
    for (const stream of streams.list()) if (!stream.outbox.restart(message, to)) end(stream)
  })
  fanOutCursors({ presence, audience, people, streams, clock, log })
  const upkeep = keepStreamsUp({ ...options, streams, end })

  return {
    open (transport, { userId, sessionId, expiresAt, slot, lastEventId }) {
      if (closing) {
        caps.release(slot)
        transport.end()
        return { close: () => {} }
      }
      const replaying = lastEventId !== undefined
      const stream: Stream = {
        transport,
        // A stream without Last-Event-ID gets what is handed on from now (SPEC: live events only).
        outbox: new StreamOutbox(transport, {
          through: replaying ? LOG_START : bus.position(),
          catchingUp: replaying,
          stallMs,
          fellBehind: () => { caughtUpOrEnded(stream, catchUp(stream, catchUpOptions)) },
          stalled: (waitingBytes) => { cut(stream, waitingBytes) },
          // Its client reconnects with Last-Event-ID and misses nothing.
          failed: (error) => {
            logThrottled(log, 'error', 'live events: writing to a stream failed; ending it', { err: error, userId })
            try {
              end(stream)
            } catch {
              // A transport that cannot write may not end either; the stream is detached all the same.
            }
          }
        }),
        userId,
        sessionId,
        slot,
        expiresAt: expiresAt?.getTime(),
        expiryTimer: undefined,
        closed: false
      }
      streams.add(stream)
      upkeep.watchExpiry(stream)
      if (lastEventId !== undefined && !stream.closed) caughtUpOrEnded(stream, replayMissed(stream, lastEventId, catchUpOptions))
      return { close: () => { detach(stream, false) } }
    },

    closeAll () {
      closing = true
      for (const stream of streams.list()) {
        try {
          stream.transport.end()
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

    get size () { return streams.size },

    pacing () {
      const pacing: StreamPacing = { heldBytes: 0, waitingBytes: 0, catchingUp: 0 }
      for (const stream of streams.list()) {
        pacing.heldBytes += stream.outbox.heldBytes
        pacing.waitingBytes += stream.outbox.waitingBytes
        if (stream.outbox.catchingUp) pacing.catchingUp++
      }
      return pacing
    }
  }
}
