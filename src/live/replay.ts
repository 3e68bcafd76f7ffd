// Catching a stream up from the event log: a stream opened with Last-Event-ID (what its client
// missed), and a live stream that fell behind its client's connection (stream-outbox.ts). Both read
// the log from the last position the stream covered, a page at a time — pages bounded by count and
// by bytes, each read only once the stream's connection has room for it — and queue the events the
// stream's user may see now, in log order; once the read reaches what fan-out has handed on, the
// stream goes live in the same turn, so nothing is missed or sent twice. A position the log cannot
// replay gets a `sync:reset` instead, whose id is the newest position, so the client's next reconnect
// resumes from there. Every read goes through `reads`, which bounds how many catch-ups query the
// live read pool at once (live-connections.ts): a thousand reconnecting clients never starve live delivery.
import type { AudienceResolver } from '../core/audience.js'
import type { Clock } from '../infra/clock.js'
import type { EventLogBus } from './event-log-bus.js'
import { audienceKey, cursorOwnerOf, messageOf } from './event-fanout.js'
import { comparePositions, formatPosition, parsePosition, type LogPosition } from './log-position.js'
import type { Stream, StreamMessage } from './streams.js'

/** More missed events than this and a reconnecting client is told to refetch instead. */
export const MAX_REPLAY_EVENTS = 5_000
/** A page of the log read for one stream: at most this many events … */
export const CATCH_UP_PAGE_EVENTS = 500
/** … and this many bytes of payload (a page always holds one event, whatever its size). */
export const CATCH_UP_PAGE_BYTES = 256 * 1024

/** Why a reconnecting client gets `sync:reset` instead of a replay; `rewound`: why an open stream gets
 *  one (the event log went back in time, event-log-bus.ts). */
export type ResetReason = 'expired' | 'unknown-id' | 'too-many' | 'rewound'

/** Runs one read of a catch-up when the live read pool may take it. */
export type CatchUpReads = <T>(read: () => Promise<T>) => Promise<T>

export interface CatchUpOptions {
  bus: EventLogBus
  audience: AudienceResolver
  clock: Clock
  reads: CatchUpReads
}

export function resetMessage (reason: ResetReason, lastEventId: string, head: LogPosition, clock: Clock): StreamMessage {
  return { id: formatPosition(head), data: { type: 'sync:reset', payload: { reason, lastEventId }, timestamp: clock.now().toISOString() } }
}

/** A stream opened with Last-Event-ID (it starts catching up, from nowhere): what it missed, then live. */
export async function replayMissed (stream: Stream, lastEventId: string, options: CatchUpOptions): Promise<void> {
  const { bus, clock, reads } = options
  const { newest, prunedThrough } = await reads(async () => await bus.bounds())
  if (stream.closed) return
  const after = parsePosition(lastEventId)
  let reset: ResetReason | undefined
  if (after === undefined || comparePositions(after, newest) > 0) reset = 'unknown-id'
  else if (comparePositions(after, prunedThrough) < 0) reset = 'expired'
  else if (await reads(async () => await bus.countAfter(after, MAX_REPLAY_EVENTS + 1)) > MAX_REPLAY_EVENTS) reset = 'too-many'
  if (stream.closed) return
  if (reset !== undefined || after === undefined) stream.outbox.caughtUpTo(newest, resetMessage(reset ?? 'unknown-id', lastEventId, newest, clock))
  else stream.outbox.caughtUpTo(after)
  await catchUp(stream, options)
}

/** Reads the log for a stream that is catching up until it is live again (or closed). */
export async function catchUp (stream: Stream, { bus, audience, clock, reads }: CatchUpOptions): Promise<void> {
  const { outbox } = stream
  // Postgres sizes every row a page read scans: once the events' size is known, a page asks for
  // about as many as its byte bound takes.
  let pageEvents = CATCH_UP_PAGE_EVENTS
  for (;;) {
    await outbox.room()
    if (stream.closed) return
    const target = bus.position()
    const from = outbox.through
    if (comparePositions(from, target) >= 0) {
      outbox.goLive()
      return
    }
    const page = await reads(async () => await bus.readPage(from, target, pageEvents, CATCH_UP_PAGE_BYTES))
    if (stream.closed) return
    if (page.events.length > 0) pageEvents = Math.min(CATCH_UP_PAGE_EVENTS, Math.ceil(CATCH_UP_PAGE_BYTES * page.events.length / Math.max(1, page.bytes)) + 1)
    if (comparePositions(from, page.prunedThrough) < 0) {
      // What it is behind on was pruned (it was behind for the whole retention): it refetches.
      outbox.caughtUpTo(target, resetMessage('expired', formatPosition(from), target, clock))
      continue
    }
    // Who may see what is asked now, once per distinct audience of the page.
    const visible = new Map<string, Promise<boolean>>()
    for (const event of page.events) {
      const key = audienceKey(event.audience)
      let may = visible.get(key)
      if (may === undefined) visible.set(key, may = reads(async () => await audience.canSee(stream.userId, event.audience)))
      const sees = await may && cursorOwnerOf(event) !== stream.userId
      if (stream.closed) return
      outbox.caughtUpTo(event.position, sees ? messageOf(event) : undefined)
    }
    // The next page starts after this one's last row, or the read reached the target.
    const reached = page.more ? page.last : target
    if (reached !== undefined) outbox.caughtUpTo(reached)
  }
}
