// Committed events to the streams that may see them. The bus hands over events in log order; who
// receives one is asked of the core's audience rule (DECISIONS §5, §7) once per distinct audience
// per batch, at the moment of delivery, and the event is written to this instance's streams of those
// users. Cursor events never reach their own user. A stream still being replayed keeps live events
// in its buffer; one that replay already covered skips them.
import type { AudienceResolver } from '../core/audience.js'
import type { Audience } from '../core/events.js'
import type { Logger } from '../infra/logger.js'
import type { EventLogBus, LoggedEvent } from './event-log-bus.js'
import { comparePositions } from './log-position.js'
import type { OpenStreams, StreamMessage } from './streams.js'
import { logThrottled } from '../infra/throttled-log.js'

const RESOLVE_RETRY_FIRST_MS = 100
const RESOLVE_RETRY_MAX_MS = 2_000

export function audienceKey (audience: Audience): string {
  switch (audience.kind) {
    case 'room': return audience.sparkId === undefined ? `r:${audience.roomId}` : `r:${audience.roomId}:${audience.sparkId}`
    case 'office': return `o:${audience.officeId}`
    case 'users': return `u:${[...audience.userIds].sort().join(',')}`
  }
}

/** The SPEC envelope; the internal audience never leaves the server. */
export function messageOf (event: LoggedEvent): StreamMessage {
  const data = { type: event.type, payload: event.payload, timestamp: event.timestamp, ...(event.userId === undefined ? {} : { userId: event.userId }) }
  return { id: event.id, data }
}

/** Cursor events are never delivered to the user whose cursor they are (DECISIONS §7). */
export function cursorOwnerOf (event: LoggedEvent): string | undefined {
  return event.type.startsWith('cursor') ? event.userId : undefined
}

export function fanOutEvents (options: { bus: EventLogBus, audience: AudienceResolver, streams: OpenStreams, log: Logger }): { stop (): void } {
  const { bus, audience, streams, log } = options
  let queue: LoggedEvent[] = []
  let flushQueued = false
  let chain: Promise<void> = Promise.resolve()
  let stopped = false

  // One stream that fails to take a message (a transport in a state it should not be in) costs that
  // stream the message, never the other streams or the events after it.
  function deliver (event: LoggedEvent, recipients: ReadonlySet<string>): void {
    const message = messageOf(event)
    const owner = cursorOwnerOf(event)
    streams.forEachOf(recipients, (stream) => {
      if (stream.userId === owner || comparePositions(event.position, stream.floor) <= 0) return
      if (stream.buffer !== undefined) {
        stream.buffer.push({ position: event.position, message })
        return
      }
      try {
        stream.connection.send(message)
      } catch (error) {
        logThrottled(log, 'error', 'live events: writing to a stream failed', { err: error, eventId: event.id, type: event.type })
      }
    })
  }

  /**
   * The recipients of an event, asked again (with a growing pause) while the database cannot answer:
   * an event is never dropped for a passing fault, and the ones after it wait their turn, so the
   * order holds. Undefined only once delivery has stopped.
   */
  async function recipientsOf (event: LoggedEvent, first: Promise<ReadonlySet<string>>): Promise<ReadonlySet<string> | undefined> {
    let attempt = first
    let pauseMs = RESOLVE_RETRY_FIRST_MS
    for (;;) {
      try {
        return await attempt
      } catch (error) {
        if (stopped) return undefined
        logThrottled(log, 'warn', 'live events: resolving recipients failed; asking again', { err: error, eventId: event.id, type: event.type })
        await new Promise((resolve) => setTimeout(resolve, pauseMs))
        pauseMs = Math.min(pauseMs * 2, RESOLVE_RETRY_MAX_MS)
        attempt = audience.recipientsOf(event.audience)
      }
    }
  }

  // Events handed over in one go by the bus were all final before they were loaded, so one
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
    // The chain keeps batches in order; a failure inside one is reported and never breaks the chain,
    // or every later event on this instance would wait behind a rejected promise forever.
    chain = chain.then(async () => {
      for (const { event, recipients } of items) {
        const resolved = await recipientsOf(event, recipients)
        if (resolved === undefined) continue
        try {
          deliver(event, resolved)
        } catch (error) {
          logThrottled(log, 'error', 'live events: delivering an event failed', { err: error, eventId: event.id, type: event.type })
        }
      }
    }).catch((error: unknown) => {
      logThrottled(log, 'error', 'live events: delivering a batch failed', { err: error })
    })
  }

  const unfollow = bus.follow((event) => {
    if (streams.size === 0) return
    queue.push(event)
    if (!flushQueued) {
      flushQueued = true
      queueMicrotask(flush)
    }
  })

  return {
    stop () {
      stopped = true
      unfollow()
    }
  }
}
