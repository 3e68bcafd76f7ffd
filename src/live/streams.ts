// The open event streams of this instance, indexed by user and by session: what every other unit of
// delivery (event fan-out, replay, cursors, upkeep) reads and the hub (stream-hub.ts) writes.
import type { Slot } from '../infra/stream-slots.js'
import type { StreamOutbox } from './stream-outbox.js'

/** One SSE message: `data` is the JSON envelope; `event` names a non-default type (heartbeat). */
export interface StreamMessage {
  readonly id?: string
  readonly event?: string
  readonly data: object
}

/**
 * The response a stream writes to (the SSE route provides it, over HTTP/1.1 or HTTP/2). Writes are
 * paced by the stream's outbox (stream-outbox.ts), never by the transport.
 */
export interface StreamTransport {
  /** Hands bytes to the client's connection; `taken` runs once the connection has taken them (they
   *  left the process), never synchronously. */
  write (bytes: Buffer, taken: () => void): void
  /** The writes made inside leave together (one chunk on HTTP/1.1). */
  batch (writes: () => void): void
  /** Ends the response (server side). */
  end (): void
  /** Cuts the response at once: its client stopped taking what it is sent. */
  abort (): void
}

export interface Stream {
  readonly transport: StreamTransport
  /** What the stream has to send, paced by its client. */
  readonly outbox: StreamOutbox
  readonly userId: string
  readonly sessionId: string
  readonly slot: Slot
  /** When the stream's credential stops being valid (ms since the epoch). */
  readonly expiresAt: number | undefined
  expiryTimer: NodeJS.Timeout | undefined
  closed: boolean
}

export class OpenStreams {
  private readonly all = new Set<Stream>()
  private readonly byUser = new Map<string, Set<Stream>>()
  private readonly bySession = new Map<string, Set<Stream>>()

  get size (): number {
    return this.all.size
  }

  add (stream: Stream): void {
    this.all.add(stream)
    index(this.byUser, stream.userId, stream)
    index(this.bySession, stream.sessionId, stream)
  }

  remove (stream: Stream): void {
    this.all.delete(stream)
    unindex(this.byUser, stream.userId, stream)
    unindex(this.bySession, stream.sessionId, stream)
  }

  /** A copy: callers may end streams while they walk it. */
  list (): Stream[] {
    return [...this.all]
  }

  ofUser (userId: string): Stream[] {
    return [...this.byUser.get(userId) ?? []]
  }

  ofSession (sessionId: string): Stream[] {
    return [...this.bySession.get(sessionId) ?? []]
  }

  hasUser (userId: string): boolean {
    return this.byUser.has(userId)
  }

  sessionIds (): string[] {
    return [...this.bySession.keys()]
  }

  /** Calls `visit` for each stream of a user in `recipients`, walking the smaller side. */
  forEachOf (recipients: ReadonlySet<string>, visit: (stream: Stream) => void): void {
    if (recipients.size <= this.byUser.size) {
      for (const userId of recipients) this.byUser.get(userId)?.forEach(visit)
    } else {
      for (const [userId, streams] of this.byUser) if (recipients.has(userId)) streams.forEach(visit)
    }
  }
}

function index<K> (map: Map<K, Set<Stream>>, key: K, stream: Stream): void {
  let set = map.get(key)
  if (set === undefined) map.set(key, set = new Set())
  set.add(stream)
}

function unindex<K> (map: Map<K, Set<Stream>>, key: K, stream: Stream): void {
  const set = map.get(key)
  set?.delete(stream)
  if (set?.size === 0) map.delete(key)
}
