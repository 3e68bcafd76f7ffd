// Cursor and presence traffic to the streams of a room's visible members (DECISIONS §7, §17): the
// coalesced batches, the joins and the leaves that CursorPresence hands on, never to the user whose
// cursor or presence it is. Chained, so a batch never overtakes the leave that followed it, nor a
// leave the join before it. A stream waiting for its connection skips a batch (the next one carries
// the newest positions); a stream catching up from the log skips `cursor:left` too, but never a
// `presence:*` message, so no client is told of a join without its leave (stream-outbox.ts).
// `presence:joined` shows the user's display name and avatar (presence-directory.ts); a user who may
// not be shown (suspended) is not announced.
import type { AudienceResolver } from '../core/audience.js'
import type { CursorPosition } from '../core/canvas/canvas.types.js'
import type { PresenceDirectory } from '../core/presence/presence-directory.js'
import { toPresentUser } from '../core/presence/presence.types.js'
import type { Clock } from '../infra/clock.js'
import type { Logger } from '../infra/logger.js'
import type { CursorPresence } from './cursor-presence.js'
import type { OpenStreams, Stream, StreamMessage } from './streams.js'
import { logThrottled } from '../infra/throttled-log.js'

/** What one recipient stream is given (notes, kept by kind: stream-outbox.ts). */
type Deliver = (stream: Stream) => void

export function fanOutCursors (options: { presence: CursorPresence, audience: AudienceResolver, people: PresenceDirectory, streams: OpenStreams, clock: Clock, log: Logger }): void {
  const { presence, audience, people, streams, clock, log } = options
  let chain: Promise<void> = Promise.resolve()

  // A room's recipients are asked once per turn of the event loop: the joins and leaves of one relay
  // message (a crowd arriving or leaving) cost one query per room, not one each.
  let askedThisTurn = new Map<string, Promise<ReadonlySet<string>>>()
  function recipientsOf (roomId: string): Promise<ReadonlySet<string>> {
    let recipients = askedThisTurn.get(roomId)
    if (recipients === undefined) {
      recipients = audience.recipientsOf({ kind: 'room', roomId })
      recipients.catch(() => {}) // reported where it is awaited
      if (askedThisTurn.size === 0) setImmediate(() => { askedThisTurn = new Map() })
      askedThisTurn.set(roomId, recipients)
    }
    return recipients
  }

  /** `deliver` may wait for something (a joined user's display info): asked at once, awaited in turn. */
  function deliverToRoom (roomId: string, deliver: Deliver | Promise<Deliver | undefined>): void {
    if (streams.size === 0) return
    const recipients = recipientsOf(roomId)
    if (deliver instanceof Promise) deliver.catch(() => {})
    chain = chain.then(async () => {
      try {
        const toStream = await deliver
        if (toStream !== undefined) streams.forEachOf(await recipients, toStream)
      } catch (error) {
        // Ephemeral: the next batch carries the newest positions; a client refetches presence on reconnect.
        logThrottled(log, 'error', 'live events: resolving cursor or presence recipients failed', { err: error, roomId })
      }
    })
  }

  presence.onBatch((roomId, cursors) => {
    const timestamp = clock.now().toISOString()
    const everyone: StreamMessage = { data: { type: 'cursors:batch-updated', payload: { cursors }, timestamp } }
    const withoutOwn = new Map<string, StreamMessage | undefined>()
    const messageFor = (stream: Stream): StreamMessage | undefined => {
      if (!cursors.some((c) => c.userId === stream.userId)) return everyone
      if (!withoutOwn.has(stream.userId)) {
        const others: CursorPosition[] = cursors.filter((c) => c.userId !== stream.userId)
        withoutOwn.set(stream.userId, others.length === 0 ? undefined : { data: { type: 'cursors:batch-updated', payload: { cursors: others }, timestamp } })
      }
      return withoutOwn.get(stream.userId)
    }
    deliverToRoom(roomId, (stream) => {
      const message = messageFor(stream)
      if (message !== undefined) stream.outbox.note(message, 'cursors')
    })
  })

  presence.onJoined((roomId, record) => {
    if (streams.size === 0) return
    const { userId } = record
    const timestamp = clock.now().toISOString()
    deliverToRoom(roomId, people.describe(userId).then((user): Deliver | undefined => {
      if (user === undefined) return undefined
      const payload = { roomId, user: toPresentUser(user, record) }
      const joined: StreamMessage = { data: { type: 'presence:joined', payload, timestamp, userId } }
      return (stream) => { if (stream.userId !== userId) stream.outbox.note(joined, 'presence') }
    }))
  })

  presence.onLeft((roomId, userId) => {
    const timestamp = clock.now().toISOString()
    const cursorLeft: StreamMessage = { data: { type: 'cursor:left', payload: { userId, roomId }, timestamp, userId } }
    const presenceLeft: StreamMessage = { data: { type: 'presence:left', payload: { roomId, userId }, timestamp, userId } }
    deliverToRoom(roomId, (stream) => {
      if (stream.userId === userId) return
      stream.outbox.note(cursorLeft, 'cursor-left')
      stream.outbox.note(presenceLeft, 'presence')
    })
  })
}
