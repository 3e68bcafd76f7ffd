// What keeps open streams honest, on one timer for all of them: a heartbeat each interval (SPEC
// Events), the refresh of their stream-cap slots, and the end of a stream whose session ended — by a
// signal from any instance (logout, account deletion), by a periodic check of the sessions table (a
// signal may be lost), or by its credential expiring (a timer for the last stretch).
import type { Db } from '../db/database.js'
import type { Clock } from '../infra/clock.js'
import type { Logger } from '../infra/logger.js'
import type { Slot } from '../infra/stream-slots.js'
import type { LiveChannel } from './live-channel.js'
import type { StreamCaps } from './stream-caps.js'
import { standingSessionIds } from './stream-sessions.repository.js'
import type { OpenStreams, Stream, StreamMessage } from './streams.js'

/** The session check runs on heartbeats, but not more often than this. */
const SESSION_CHECK_EVERY_MS = 10_000
const MAX_TIMER_MS = 2 ** 31 - 1

export interface StreamUpkeepOptions {
  streams: OpenStreams
  caps: StreamCaps
  db: Db
  channel: LiveChannel
  clock: Clock
  log: Logger
  heartbeatMs: number
  /** Ends a stream (server side) and frees what it held. */
  end (stream: Stream): void
}

export interface StreamUpkeep {
  /** Ends the stream now if its credential has expired, or sets a timer for its last stretch. */
  watchExpiry (stream: Stream): void
  stop (): void
}

export function keepStreamsUp (options: StreamUpkeepOptions): StreamUpkeep {
  const { streams, caps, db, channel, clock, log, heartbeatMs, end } = options
  let lastSessionCheck = 0
  let sessionCheckRunning = false

  function watchExpiry (stream: Stream): void {
    if (stream.expiresAt === undefined || stream.expiryTimer !== undefined) return
    const left = stream.expiresAt - clock.now().getTime()
    if (left <= 0) {
      end(stream)
      return
    }
    // Far expiries are re-checked on heartbeats; only the last stretch needs its own timer.
    if (left > heartbeatMs * 2) return
    stream.expiryTimer = setTimeout(() => { end(stream) }, Math.min(left, MAX_TIMER_MS))
  }

  channel.on('s', (sessionId) => { for (const stream of streams.ofSession(sessionId)) end(stream) })
  channel.on('u', (userId) => { for (const stream of streams.ofUser(userId)) end(stream) })

  async function checkSessions (): Promise<void> {
    if (sessionCheckRunning || streams.size === 0) return
    sessionCheckRunning = true
    try {
      const ids = streams.sessionIds()
      const standing = await standingSessionIds(db, ids, clock.now())
      for (const id of ids) if (!standing.has(id)) for (const stream of streams.ofSession(id)) end(stream)
    } catch (error) {
      log.warn({ err: error }, 'live events: session check failed')
    } finally {
      sessionCheckRunning = false
    }
  }

  const heartbeat = setInterval(() => {
    if (streams.size === 0) return
    const now = clock.now()
    const message: StreamMessage = { event: 'heartbeat', data: { timestamp: now.toISOString() } }
    const slots: Slot[] = []
    for (const stream of streams.list()) {
      stream.connection.send(message)
      slots.push(stream.slot)
      watchExpiry(stream)
    }
    caps.refresh(slots)
    if (now.getTime() - lastSessionCheck >= SESSION_CHECK_EVERY_MS) {
      lastSessionCheck = now.getTime()
      void checkSessions()
    }
  }, heartbeatMs)
  heartbeat.unref()

  return {
    watchExpiry,
    stop: () => { clearInterval(heartbeat) }
  }
}
