// What keeps open streams honest, on one timer for all of them: a heartbeat each interval (SPEC
// Events) with `: ping` comments between heartbeats (DECISIONS §16), the refresh of their stream-cap
// slots, and the end of a stream whose session ended — by a signal from any instance (logout, account
// deletion), by a periodic check of the sessions table (a signal may be lost), or by its credential
// expiring (a timer for the last stretch).
import type { Db } from '../db/database.js'
import type { Clock } from '../infra/clock.js'
import type { Logger } from '../infra/logger.js'
import type { Slot } from '../infra/stream-slots.js'
import type { LiveChannel } from './live-channel.js'
import type { StreamCaps } from './stream-caps.js'
import { standingSessionIds } from './stream-sessions.repository.js'
import type { OpenStreams, Stream, StreamMessage } from './streams.js'
import { logThrottled } from '../infra/throttled-log.js'

/**
 * Between two heartbeats an SSE comment (`: ping`) goes out at least this often (DECISIONS §16): a
 * proxy that cuts a response silent for 30 s (Next.js rewrites) never cuts a stream.
 */
export const PING_EVERY_MS = 15_000
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
      logThrottled(log, 'warn', 'live events: session check failed', { err: error })
    } finally {
      sessionCheckRunning = false
    }
  }

  // One timer for both: `ticks` beats per heartbeat interval, the last a heartbeat, the others a
  // ping (at least one between two heartbeats, at most PING_EVERY_MS apart).
  const ticks = Math.max(2, Math.ceil(heartbeatMs / PING_EVERY_MS))
  let tick = 0
  const timer = setInterval(() => {
    tick = (tick + 1) % ticks
    if (streams.size === 0) return
    if (tick !== 0) {
      for (const stream of streams.list()) stream.connection.ping()
      return
    }
    const now = clock.now()
    const message: StreamMessage = { event: 'heartbeat', data: { timestamp: now.toISOString() } }
    const slots: Slot[] = []
    for (const stream of streams.list()) {
      stream.connection.send(message)
      slots.push(stream.slot)
      watchExpiry(stream)
    }
    caps.refresh(slots)
    // A clock set back (a correction of the wall clock) must not postpone the check until it catches up.
    if (now.getTime() - lastSessionCheck >= SESSION_CHECK_EVERY_MS || now.getTime() < lastSessionCheck) {
      lastSessionCheck = now.getTime()
      void checkSessions()
    }
  }, heartbeatMs / ticks)
  timer.unref()

  return {
    watchExpiry,
    stop: () => { clearInterval(timer) }
  }
}
