// Delivery of the event log on one instance. Operations write their events in their own transactions
// (src/core/transaction.ts); this bus hands every committed event to the local subscribers once, in
// the log's delivery order (event-log.repository.ts), on every instance.
// When to look: right after a local transaction committed events (`committed`), when another
// instance says it did (`e:` on the live channel, sent once per turn of the event loop), when the
// listening connection comes back, and every few seconds regardless, so a wake-up lost with a
// crashed instance delays an event by that much at most and loses nothing. While a newer event is
// held back behind a transaction still open, it looks again shortly, and a long wait is reported
// (delivery-stall.ts). The log going back in time (the database restored from a backup, whose
// transaction ids then repeat) is noticed on those regular looks: delivery starts again from the
// log's newest event, and the streams are told to refetch (`onRewind`).
// Pruning removes events past the retention in small batches, each its own short transaction, by
// one instance at a time (an advisory lock), so it never holds delivery back for long.
import { randomBytes } from 'node:crypto'
import type { Db } from '../db/database.js'
import type { Clock } from '../infra/clock.js'
import type { Logger } from '../infra/logger.js'
import type { AnyEvent, Audience, EventListener, EventNotifier } from '../core/events.js'
import { watchStalls } from './delivery-stall.js'
import { countEventsAfter, findEventsBetween, findFinalEventsAfter, logBounds, notify, pruneBatch, type EventLogRow } from './event-log.repository.js'
import type { LiveChannel } from './live-channel.js'
import { comparePositions, formatPosition, LOG_START, type LogPosition } from './log-position.js'
import { logThrottled } from '../infra/throttled-log.js'

/** How long the log keeps an event for replay (documented in README: 24 hours). */
export const EVENT_LOG_RETENTION_MS = 24 * 3600_000
const PRUNE_EVERY_MS = 3600_000
/** Events one pruning transaction removes at most, and the pause before the next batch. */
const PRUNE_BATCH = 1_000
const PRUNE_PAUSE_MS = 20
const LOAD_BATCH = 500
/** A safety net: delivery looks this often even when nobody says there is something new. */
const POLL_EVERY_MS = 2_000
/** After a failed load. */
const RETRY_LOAD_MS = 500
/** While events are held back behind open transactions: the first look again, doubling up to the last. */
const HELD_BACK_FIRST_MS = 5
const HELD_BACK_MAX_MS = 200

/** An event as the log holds it: the bus event, its place in the delivery order and its SSE `id`. */
export type LoggedEvent = AnyEvent & { readonly id: string, readonly position: LogPosition }

export interface EventLogBus extends EventNotifier {
  /** Every delivered event, with its place in the log. */
  follow (listener: (event: LoggedEvent) => void): () => void
  /** Every delivered event (tests record what operations publish). */
  subscribe (listener: EventListener): () => void
  /** The newest final position in the log and the position up to which it has been pruned. */
  bounds (): Promise<{ newest: LogPosition, prunedThrough: LogPosition }>
  /** Logged events with `after < position <= upTo`, in delivery order, at most `limit`. */
  readBetween (after: LogPosition, upTo: LogPosition, limit: number): Promise<LoggedEvent[]>
  countAfter (after: LogPosition, cap: number): Promise<number>
  /** Removes events older than the retention window (0 when another instance is pruning); runs hourly on its own. */
  prune (): Promise<number>
  /** How long delivery has been held back behind an open transaction, in ms (0: not at all). */
  lagMs (): number
  /** Told when the log went back in time (a restore from a backup): `from` was delivered, `to` is the log's newest now. */
  onRewind (listener: (from: LogPosition, to: LogPosition) => void): void
  start (): Promise<void>
  stop (): void
}

function isAudience (value: unknown): value is Audience {
  if (typeof value !== 'object' || value === null) return false
  const candidate = value as { kind?: unknown, roomId?: unknown, officeId?: unknown, userIds?: unknown }
  if (candidate.kind === 'room') return typeof candidate.roomId === 'string'
  if (candidate.kind === 'office') return typeof candidate.officeId === 'string'
  return candidate.kind === 'users' && Array.isArray(candidate.userIds) && candidate.userIds.every((id) => typeof id === 'string')
}

function toEvent (row: EventLogRow): LoggedEvent | undefined {
  if (!isAudience(row.audience)) return undefined
  // The log only ever holds what operations published from the typed EventMap.
  return {
    id: formatPosition(row.position),
    position: row.position,
    type: row.type,
    payload: row.payload,
    timestamp: row.createdAt.toISOString(),
    audience: row.audience,
    ...(row.userId === null ? {} : { userId: row.userId })
  } as LoggedEvent
}

/** `db` takes pruning and wake-ups; `readDb` (the delivery path's own connections) every read. */
export function createEventLogBus (options: { db: Db, readDb?: Db, channel: LiveChannel, clock: Clock, log: Logger }): EventLogBus {
  const { db, channel, clock, log } = options
  const readDb = options.readDb ?? db
  // Wake-ups this instance sends carry its name, so it does not answer its own.
  const instance = randomBytes(6).toString('base64url')
  const listeners = new Set<(event: LoggedEvent) => void>()
  let delivered = LOG_START
  let draining = false
  let again = false
  let started = false
  let stopped = false
  let heldBackDelay = HELD_BACK_FIRST_MS
  const stalls = watchStalls({ readDb, log })
  const rewindListeners: Array<(from: LogPosition, to: LogPosition) => void> = []
  /** Set by the regular look and by a reconnect: the next drain first checks that the log did not go back. */
  let rewindCheckDue = false
  let lookTimer: NodeJS.Timeout | undefined
  let pollTimer: NodeJS.Timeout | undefined
  let pruneTimer: NodeJS.Timeout | undefined
  let waking = false
  let wakeAgain = false

  function hand (event: LoggedEvent): void {
    for (const listener of listeners) {
      try {
        listener(event)
      } catch (error) {
        log.error({ err: error, type: event.type }, 'event listener failed')
      }
    }
  }

  function lookLater (ms: number): void {
    if (stopped || lookTimer !== undefined) return
    lookTimer = setTimeout(() => { lookTimer = undefined; void drain() }, ms)
  }

  async function drain (): Promise<void> {
    if (stopped || !started) return
    if (draining) {
      again = true
      return
    }
    draining = true
    let heldBack = false
    try {
      if (rewindCheckDue) {
        rewindCheckDue = false
        await checkRewound()
      }
      // Pages until the log is read up to what is final; once more if someone asked meanwhile.
      for (;;) {
        again = false
        const page = await findFinalEventsAfter(readDb, delivered, LOAD_BATCH)
        for (const row of page.rows) {
          delivered = row.position
          const event = toEvent(row)
          if (event !== undefined) hand(event)
        }
        heldBack = page.waiting !== undefined
        if (page.rows.length < LOAD_BATCH) stalls.observe(page.waiting, delivered)
        const more = page.rows.length === LOAD_BATCH
        if (stopped || !(more || again)) break
      }
      if (heldBack) {
        lookLater(heldBackDelay)
        heldBackDelay = Math.min(heldBackDelay * 2, HELD_BACK_MAX_MS)
      } else {
        heldBackDelay = HELD_BACK_FIRST_MS
      }
    } catch (error) {
      if (!stopped) {
        logThrottled(log, 'error', 'live events: loading from the event log failed, retrying', { err: error })
        lookLater(RETRY_LOAD_MS)
      }
    } finally {
      draining = false
    }
  }

  // At most one wake-up in flight; commits meanwhile get exactly one more, sent after it. Every
  // commit is followed by a wake-up, and a busy instance sends far fewer than one per commit.
  function wakeOthers (): void {
    if (waking) {
      wakeAgain = true
      return
    }
    waking = true
    notify(db, channel.name, `e:${instance}`).catch((error: unknown) => {
      // The others find the events on their next poll.
      logThrottled(log, 'warn', 'live events: waking the other instances failed', { err: error })
    }).finally(() => {
      waking = false
      if (wakeAgain) {
        wakeAgain = false
        wakeOthers()
      }
    })
  }

  channel.on('e', (sender) => {
    if (sender !== instance) void drain()
  })
  channel.onResume(() => {
    rewindCheckDue = true
    void drain()
  })

  /**
   * Every position ever delivered stays at or before the log's newest final one (pruned events move
   * the horizon past them). Behind it, the database went back in time: what was delivered after the
   * newest position no longer exists, and the transaction ids after it are being used again.
   */
  async function checkRewound (): Promise<void> {
    const { newest } = await logBounds(readDb)
    if (comparePositions(newest, delivered) >= 0) return
    const from = delivered
    delivered = newest
    log.warn({ delivered: formatPosition(from), newest: formatPosition(newest) },
      'live events: the event log is behind what was delivered (the database was restored from a backup?); delivering from its newest event, streams are reset')
    for (const listener of rewindListeners) {
      try {
        listener(from, newest)
      } catch (error) {
        log.error({ err: error }, 'live events: a rewind listener failed')
      }
    }
  }

  async function prune (): Promise<number> {
    const cutoff = new Date(clock.now().getTime() - EVENT_LOG_RETENTION_MS)
    let removed = 0
    for (;;) {
      const batch = await pruneBatch(db, cutoff, PRUNE_BATCH)
      if (batch === undefined) break // another instance is pruning
      removed += batch
      if (batch < PRUNE_BATCH || stopped) break
      await new Promise((resolve) => setTimeout(resolve, PRUNE_PAUSE_MS))
    }
    return removed
  }

  const subscribe = (listener: (event: LoggedEvent) => void): () => void => {
    listeners.add(listener)
    return () => { listeners.delete(listener) }
  }

  return {
    committed () {
      void drain()
      wakeOthers()
    },
    follow: subscribe,
    subscribe,
    bounds: async () => await logBounds(readDb),
    async readBetween (after, upTo, limit) {
      const rows = await findEventsBetween(readDb, after, upTo, limit)
      return rows.map(toEvent).filter((e): e is LoggedEvent => e !== undefined)
    },
    countAfter: async (after, cap) => await countEventsAfter(readDb, after, cap),
    prune,
    lagMs: () => stalls.lagMs(),
    onRewind (listener) {
      rewindListeners.push(listener)
    },
    /** Call after the channel listens: events that are final before now are not delivered live. */
    async start () {
      delivered = (await logBounds(readDb)).newest
      started = true
      void drain()
      pollTimer = setInterval(() => {
        rewindCheckDue = true
        void drain()
      }, POLL_EVERY_MS)
      pollTimer.unref()
      const runPrune = (): void => {
        prune().catch((error: unknown) => { logThrottled(log, 'warn', 'live events: pruning the event log failed', { err: error }) })
      }
      runPrune()
      pruneTimer = setInterval(runPrune, PRUNE_EVERY_MS)
      pruneTimer.unref()
    },
    stop () {
      stopped = true
      listeners.clear()
      if (lookTimer !== undefined) clearTimeout(lookTimer)
      if (pollTimer !== undefined) clearInterval(pollTimer)
      if (pruneTimer !== undefined) clearInterval(pruneTimer)
    }
  }
}
