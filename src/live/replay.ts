// A stream opened with Last-Event-ID: live events wait in its buffer while it is sent the events it
// missed and may see now, in log order; then the buffer, minus what replay already covered. A
// position the log cannot replay gets a `sync:reset` instead, whose id is the newest position, so
// the client's next reconnect resumes from there.
import type { AudienceResolver } from '../core/audience.js'
import type { Clock } from '../infra/clock.js'
import type { EventLogBus } from './event-log-bus.js'
import { audienceKey, cursorOwnerOf, messageOf } from './event-fanout.js'
import { comparePositions, formatPosition, parsePosition, type LogPosition } from './log-position.js'
import type { Stream, StreamMessage } from './streams.js'

/** More missed events than this and a reconnecting client is told to refetch instead. */
export const MAX_REPLAY_EVENTS = 5_000
const REPLAY_PAGE = 500

/** Why a reconnecting client gets `sync:reset` instead of a replay; `rewound`: why an open stream gets
 *  one (the event log went back in time, event-log-bus.ts). */
export type ResetReason = 'expired' | 'unknown-id' | 'too-many' | 'rewound'

export interface ReplayOptions {
  bus: EventLogBus
  audience: AudienceResolver
  clock: Clock
}

export function resetMessage (reason: ResetReason, lastEventId: string, head: LogPosition, clock: Clock): StreamMessage {
  return { id: formatPosition(head), data: { type: 'sync:reset', payload: { reason, lastEventId }, timestamp: clock.now().toISOString() } }
}

export async function replayMissed (stream: Stream, lastEventId: string, { bus, audience, clock }: ReplayOptions): Promise<void> {
  const { newest, prunedThrough } = await bus.bounds()
  if (stream.closed) return
  const after = parsePosition(lastEventId)
  if (after === undefined || comparePositions(after, newest) > 0) {
    stream.connection.send(resetMessage('unknown-id', lastEventId, newest, clock))
  } else if (comparePositions(after, prunedThrough) < 0) {
    stream.connection.send(resetMessage('expired', lastEventId, newest, clock))
  } else if (await bus.countAfter(after, MAX_REPLAY_EVENTS + 1) > MAX_REPLAY_EVENTS) {
    stream.connection.send(resetMessage('too-many', lastEventId, newest, clock))
  } else {
    // Everything final before this stream registered is at or before `newest`; later events are in the buffer.
    const visible = new Map<string, Promise<boolean>>()
    let from = after
    for (;;) {
      const page = await bus.readBetween(from, newest, REPLAY_PAGE)
      if (stream.closed) return
      for (const event of page) {
        const key = audienceKey(event.audience)
        let may = visible.get(key)
        if (may === undefined) visible.set(key, may = audience.canSee(stream.userId, event.audience))
        if (await may && cursorOwnerOf(event) !== stream.userId && !stream.closed) stream.connection.send(messageOf(event))
      }
      if (page.length < REPLAY_PAGE) break
      from = page[page.length - 1]?.position ?? newest
    }
  }
  if (stream.closed) return
  const waiting = stream.buffer ?? []
  stream.buffer = undefined
  stream.floor = newest
  for (const { position, message } of waiting) if (comparePositions(position, newest) > 0) stream.connection.send(message)
}
