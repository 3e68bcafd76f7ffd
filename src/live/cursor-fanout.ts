// Cursor traffic to the streams of a room's visible members (DECISIONS §7): the coalesced batches and
// the leaves that CursorPresence hands on, never to the user whose cursor it is. Chained, so a batch
// never overtakes the leave that followed it.
import type { AudienceResolver } from '../core/audience.js'
import type { CursorPosition } from '../core/canvas/canvas.types.js'
import type { Clock } from '../infra/clock.js'
import type { Logger } from '../infra/logger.js'
import type { CursorPresence } from './cursor-presence.js'
import type { OpenStreams, Stream, StreamMessage } from './streams.js'
import { logThrottled } from '../infra/throttled-log.js'

export function fanOutCursors (options: { presence: CursorPresence, audience: AudienceResolver, streams: OpenStreams, clock: Clock, log: Logger }): void {
  const { presence, audience, streams, clock, log } = options
  let chain: Promise<void> = Promise.resolve()

  function deliverToRoom (roomId: string, build: (stream: Stream) => StreamMessage | undefined): void {
    if (streams.size === 0) return
    const recipients = audience.recipientsOf({ kind: 'room', roomId })
    recipients.catch(() => {}) // reported where it is awaited
    chain = chain.then(async () => {
      try {
        streams.forEachOf(await recipients, (stream) => {
          const message = build(stream)
          if (message !== undefined) stream.connection.send(message)
        })
      } catch (error) {
        // Cursors are ephemeral: the next batch carries the newest positions anyway.
        logThrottled(log, 'error', 'live events: resolving cursor recipients failed', { err: error, roomId })
      }
    })
  }

  presence.onBatch((roomId, cursors) => {
    const timestamp = clock.now().toISOString()
    const everyone: StreamMessage = { data: { type: 'cursors:batch-updated', payload: { cursors }, timestamp } }
    const withoutOwn = new Map<string, StreamMessage | undefined>()
    deliverToRoom(roomId, (stream) => {
      if (!cursors.some((c) => c.userId === stream.userId)) return everyone
      if (!withoutOwn.has(stream.userId)) {
        const others: CursorPosition[] = cursors.filter((c) => c.userId !== stream.userId)
        withoutOwn.set(stream.userId, others.length === 0 ? undefined : { data: { type: 'cursors:batch-updated', payload: { cursors: others }, timestamp } })
      }
      return withoutOwn.get(stream.userId)
    })
  })

  presence.onLeft((roomId, userId) => {
    const message: StreamMessage = { data: { type: 'cursor:left', payload: { userId, roomId }, timestamp: clock.now().toISOString(), userId } }
    deliverToRoom(roomId, (stream) => stream.userId === userId ? undefined : message)
  })
}
