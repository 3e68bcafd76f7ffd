// The event bus of a cluster: `publish` appends the event to the durable log and NOTIFYs its id in
// the same statement; every instance (the publishing one too, so there is exactly one delivery path)
// hears the id on the live channel, loads what it has not delivered yet and hands it to its local
// subscribers, in id order, each event once. Ids commit in id order (see appendEvents), so "delivered
// up to id N" is exact: after a lost listening connection the bus simply loads everything past N.
// Appends are serialised per instance and batched: while one append is in flight, later publishes
// queue up and go out together in the next one (one commit, one notification). Appends commit one
// at a time anyway (NOTIFY and the id-order lock serialise commits database-wide), so this turns
// many small flushed commits into few larger ones.
import type { Db } from '../../db/database.js'
import type { Clock } from '../../infra/clock.js'
import type { Logger } from '../deps.js'
import type { AnyEvent, Audience, EventBus, EventListener } from '../events.js'
import { appendEvents, countEventsAfter, findEventsBetween, logBounds, pruneEventsBefore, type EventLogRow, type NewEvent } from './event-log.repository.js'
import type { LiveChannel } from './live-channel.js'

/** How long the log keeps an event for replay (documented in README: 24 hours). */
export const EVENT_LOG_RETENTION_MS = 24 * 3600_000
const PRUNE_EVERY_MS = 3600_000
const LOAD_BATCH = 500
const APPEND_BATCH = 500
const RETRY_LOAD_MS = 500

/** An event as the log holds it: the bus event plus its log id (the SSE `id`). */
export type LoggedEvent = AnyEvent & { readonly id: string }

export interface EventLogBus extends EventBus {
  /** Like `subscribe`, with each event's log id. */
  follow (listener: (event: LoggedEvent) => void): () => void
  /** Newest id in the log and the id up to which it has been pruned. */
  bounds (): Promise<{ newest: string, prunedThrough: string }>
  /** Logged events with `after < id <= upTo`, oldest first, at most `limit`. */
  readBetween (after: string, upTo: string, limit: number): Promise<LoggedEvent[]>
  countAfter (after: string, cap: number): Promise<number>
  /** Removes events older than the retention window; runs hourly on its own. */
  prune (): Promise<number>
  start (): Promise<void>
  stop (): void
}

function isAudience (value: unknown): value is Audience {
  if (typeof value !== 'object' || value === null) return false
  const candidate = value as { kind?: unknown, roomId?: unknown, userIds?: unknown }
  if (candidate.kind === 'room') return typeof candidate.roomId === 'string'
  return candidate.kind === 'users' && Array.isArray(candidate.userIds) && candidate.userIds.every((id) => typeof id === 'string')
}

function toEvent (row: EventLogRow): LoggedEvent | undefined {
  if (!isAudience(row.audience)) return undefined
  // The log only ever holds what `publish` wrote from the typed EventMap.
  return {
    id: row.id,
    type: row.type,
    payload: row.payload,
    timestamp: row.createdAt.toISOString(),
    audience: row.audience,
    ...(row.userId === null ? {} : { userId: row.userId })
  } as LoggedEvent
}

/** `db` takes appends and pruning; `readDb` (the delivery path's own connections) every read. */
export function createEventLogBus (options: { db: Db, readDb?: Db, channel: LiveChannel, clock: Clock, log: Logger }): EventLogBus {
  const { db, channel, clock, log } = options
  const readDb = options.readDb ?? db
  const listeners = new Set<(event: LoggedEvent) => void>()
  let delivered = 0n
  let heard = 0n
  let draining = false
  let started = false
  let stopped = false
  let retryTimer: NodeJS.Timeout | undefined
  let catchUpTimer: NodeJS.Timeout | undefined
  let pruneTimer: NodeJS.Timeout | undefined
  const outbox: Array<{ event: NewEvent, done: (error?: unknown) => void }> = []
  let appending = false

  async function appendQueued (): Promise<void> {
    if (appending) return
    appending = true
    try {
      while (outbox.length > 0) {
        const batch = outbox.splice(0, APPEND_BATCH)
        try {
          await appendEvents(db, channel.name, batch.map((b) => b.event))
          for (const item of batch) item.done()
        } catch (error) {
          for (const item of batch) item.done(error)
        }
      }
    } finally {
      appending = false
    }
  }

  function hand (event: LoggedEvent): void {
    for (const listener of listeners) {
      try {
        listener(event)
      } catch (error) {
        log.error({ err: error, type: event.type }, 'event listener failed')
      }
    }
  }

  async function drain (): Promise<void> {
    if (draining || stopped || !started) return
    draining = true
    try {
      while (delivered < heard && !stopped) {
        const upTo = heard
        const rows = await findEventsBetween(readDb, String(delivered), String(upTo), LOAD_BATCH)
        for (const row of rows) {
          const event = toEvent(row)
          delivered = BigInt(row.id)
          if (event !== undefined) hand(event)
        }
        // A short page means everything up to `upTo` is loaded (missing ids were never committed).
        if (rows.length < LOAD_BATCH) delivered = upTo
      }
    } catch (error) {
      if (!stopped) {
        log.error({ err: error }, 'live events: loading from the event log failed, retrying')
        retryTimer ??= setTimeout(() => { retryTimer = undefined; void drain() }, RETRY_LOAD_MS)
      }
    } finally {
      draining = false
    }
    if (delivered < heard && retryTimer === undefined && !stopped) void drain()
  }

  function heardUpTo (id: bigint): void {
    if (id > heard) heard = id
    void drain()
  }

  channel.on('e', (body) => {
    if (/^\d+$/.test(body)) heardUpTo(BigInt(body))
  })
  // After the listening connection came back, nothing announces what committed during the gap, so
  // the newest id is read until that succeeds: giving up would leave those events undelivered until
  // some later event happened to be heard.
  function catchUp (): void {
    if (stopped) return
    logBounds(readDb).then(({ newest }) => { heardUpTo(BigInt(newest)) }, (error: unknown) => {
      if (stopped) return
      log.error({ err: error }, 'live events: catching up after reconnect failed, retrying')
      catchUpTimer ??= setTimeout(() => { catchUpTimer = undefined; catchUp() }, RETRY_LOAD_MS)
    })
  }
  channel.onResume(catchUp)

  async function prune (): Promise<number> {
    return await pruneEventsBefore(db, new Date(clock.now().getTime() - EVENT_LOG_RETENTION_MS))
  }

  return {
    async publish (type, payload, { audience, userId }) {
      await new Promise<void>((resolve, reject) => {
        outbox.push({ event: { type, payload, audience, userId: userId ?? null }, done: (error) => { if (error === undefined) resolve(); else reject(error) } })
        void appendQueued()
      })
    },
    subscribe (listener: EventListener) {
      listeners.add(listener)
      return () => { listeners.delete(listener) }
    },
    follow (listener) {
      listeners.add(listener)
      return () => { listeners.delete(listener) }
    },
    bounds: async () => await logBounds(readDb),
    async readBetween (after, upTo, limit) {
      const rows = await findEventsBetween(readDb, after, upTo, limit)
      return rows.map(toEvent).filter((e): e is LoggedEvent => e !== undefined)
    },
    countAfter: async (after, cap) => await countEventsAfter(readDb, after, cap),
    prune,
    /** Call after the channel listens: events committed before now are not delivered live. */
    async start () {
      const { newest } = await logBounds(readDb)
      delivered = BigInt(newest)
      if (heard < delivered) heard = delivered
      started = true
      void drain()
      const runPrune = (): void => {
        prune().catch((error: unknown) => { log.warn({ err: error }, 'live events: pruning the event log failed') })
      }
      runPrune()
      pruneTimer = setInterval(runPrune, PRUNE_EVERY_MS)
      pruneTimer.unref()
    },
    stop () {
      stopped = true
      listeners.clear()
      if (retryTimer !== undefined) clearTimeout(retryTimer)
      if (catchUpTimer !== undefined) clearTimeout(catchUpTimer)
      if (pruneTimer !== undefined) clearInterval(pruneTimer)
    }
  }
}
