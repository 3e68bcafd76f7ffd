// What one stream has to send, paced by its client (DECISIONS §17 "A stream paces itself and never
// strands a reader"). The stream writes to its connection while less than PACE_BYTES of what it
// wrote is still in the process (not yet taken by the connection), and waits for those bytes to be
// taken before writing more. Messages offered meanwhile wait in a queue of references to the
// messages' shared bytes (every stream holds the same bytes of an event).
//
// A stream *live* takes events as fan-out offers them. When what waits for it (unsent bytes and the
// queue) would pass MAX_WAITING_BYTES, it stops queueing: it drops its queued events and *catches up*
// instead — once its connection has room, it reads the event log from before the first event it
// dropped, a page at a time, exactly as a reconnect with Last-Event-ID is replayed (replay.ts), then
// goes live again. So its memory stays bounded whatever the burst, and no event is lost, repeated or
// reordered. While it catches up, fan-out's events are only counted (they are read from the log).
// Messages that are not in the log: a heartbeat is always queued (SPEC: a client takes a minute
// without one for a dead connection) but never a second one while one waits; a cursor batch is
// skipped by a stream waiting for its connection (PACE_BYTES or more held) or catching up — cursors
// are ephemeral, the next batch carries the newest positions — and a `cursor:left` by a stream
// catching up (it is not sent again). `presence:joined` and `presence:left` are never skipped (only
// refused, like any note, past MAX_WAITING_BYTES held): a client told of a join is told of its leave.
//
// A client that takes nothing for the stall time (30 s in production) while at least STALL_BYTES wait
// for it is stalled: the stream is cut, and its client reconnects with Last-Event-ID when it wakes.
// What waits counts every byte the stream knows it owes: written but not taken, queued, and the
// events fan-out offered while it was catching up that it has not read from the log yet. Time in
// which this process's own event loop was blocked is not counted against the client.
import { frameOf, PING_FRAME } from './stream-frames.js'
import { comparePositions, type LogPosition } from './log-position.js'
import type { StreamMessage, StreamTransport } from './streams.js'

/** Bytes a stream may have handed to its connection and not seen taken before it waits. */
export const PACE_BYTES = 64 * 1024
/**
 * Past this (unsent plus queued), a live stream stops queueing and catches up from the log. The
 * queue holds references to bytes every stream shares, so a broadcast burst costs its bytes once,
 * not once per stream; catching up costs each stream its own reads. A stream that gets a burst of
 * its own holds at most this much for it.
 */
export const MAX_WAITING_BYTES = 4 << 20
/** A client that takes nothing for the stall time while this much waits is cut off (DECISIONS §17). */
export const STALL_BYTES = 1 << 20
/** The stall watch looks this many times per stall time. */
const STALL_TICKS = 10
/** Live events offered while catching up are counted in at most this many runs (their bytes only). */
const MAX_BEHIND_RUNS = 64

export interface StreamOutboxOptions {
  /** The position the stream has covered: live events at or before it are not sent. */
  through: LogPosition
  /** True for a stream opened to replay (Last-Event-ID): it starts by catching up. */
  catchingUp: boolean
  stallMs: number
  /** The stream stopped queueing: the caller starts its catch-up (replay.ts `catchUp`). */
  fellBehind: () => void
  /** Its client took nothing for `stallMs` while at least STALL_BYTES waited: the caller cuts it. */
  stalled: (waitingBytes: number) => void
  /** The transport threw when written to (a state it should never be in): the caller ends the stream. */
  failed: (error: unknown) => void
  /** Milliseconds of a monotonic clock. */
  now?: () => number
}

/** A message that is not in the log: how a stream that is behind treats it (see the header). */
export type NoteKind = 'heartbeat' | 'cursors' | 'cursor-left' | 'presence'

interface Queued { frame: Buffer, position: LogPosition | undefined, heartbeat: boolean }

/** Events offered while catching up, from `first` on: their bytes are owed until the log read passes `first`. */
interface BehindRun { first: LogPosition, bytes: number }

// Streams with something queued are written once per turn of the event loop, together, so the
// messages of one batch of events leave in one write per stream.
const due = new Set<StreamOutbox>()
function flushDue (): void {
  const outboxes = [...due]
  due.clear()
  for (const outbox of outboxes) outbox.flush()
}

export class StreamOutbox {
  private readonly transport: StreamTransport
  private readonly options: StreamOutboxOptions
  private readonly now: () => number
  private queue: Queued[] = []
  private head = 0
  private queuedBytes = 0
  private heartbeatsQueued = 0
  /** Written to the connection and not taken yet. */
  private unsent = 0
  private behind: BehindRun[] = []
  private behindBytes = 0
  private covered: LogPosition
  private catching: boolean
  private closed = false
  private roomWaiters: Array<() => void> = []
  /** While something waits on the client: the stall watch (see `watchStall`). */
  private stallTimer: NodeJS.Timeout | undefined
  private takenSinceTick = false
  private lastTickAt = 0
  private idleMs = 0

  constructor (transport: StreamTransport, options: StreamOutboxOptions) {
    this.transport = transport
    this.options = options
    this.now = options.now ?? (() => performance.now())
    this.covered = options.through
    this.catching = options.catchingUp
  }

  /** Every event at or before this position was sent, queued or found not for this stream. */
  get through (): LogPosition { return this.covered }

  get catchingUp (): boolean { return this.catching }

  /** What the process holds for this stream: written and not taken, and queued. */
  get heldBytes (): number { return this.unsent + this.queuedBytes }

  /** Every byte the stream knows it owes its client (what the stall rule weighs). */
  get waitingBytes (): number { return this.unsent + this.queuedBytes + this.behindBytes }

  /** A live event fan-out found for this stream. */
  event (position: LogPosition, message: StreamMessage): void {
    if (this.closed || comparePositions(position, this.covered) <= 0) return
    const frame = frameOf(message)
    if (this.catching) {
      this.owe(position, frame.length)
      this.checkStall()
      return
    }
    const held = this.heldBytes
    if (held > 0 && held + frame.length > MAX_WAITING_BYTES) {
      this.fallBehind(position, frame.length)
      return
    }
    this.push(frame, position, false)
    this.covered = position
  }

  /** A message that is not in the log (a heartbeat, cursors, `cursor:left`, `presence:*`). */
  note (message: StreamMessage, kind: NoteKind): void {
    if (this.closed || this.skips(kind)) return
    const frame = frameOf(message)
    const held = this.heldBytes
    if (held > 0 && held + frame.length > MAX_WAITING_BYTES) return
    this.push(frame, undefined, kind === 'heartbeat')
  }

  /** Whether a note of this kind is left out now (the rules in the header). */
  private skips (kind: NoteKind): boolean {
    switch (kind) {
      case 'heartbeat': return this.heartbeatsQueued > 0
      case 'presence': return false
      case 'cursor-left': return this.catching
      case 'cursors': return this.catching || this.heldBytes >= PACE_BYTES
    }
  }

  /** An SSE comment for an idle stream (proxies cut silent ones); a busy stream is not silent. */
  ping (): void {
    if (this.closed || this.catching || this.heldBytes > 0) return
    this.push(PING_FRAME, undefined, false)
  }

  /** Catching up: an event read from the log (`message` undefined when it is not for this stream). */
  caughtUpTo (position: LogPosition, message?: StreamMessage): void {
    if (this.closed || comparePositions(position, this.covered) <= 0) return
    if (message !== undefined) this.push(frameOf(message), position, false)
    this.covered = position
    this.settleBehind()
  }

  /** Catching up is done: from now on fan-out's events are sent as they come. */
  goLive (): void {
    this.catching = false
    this.behind = []
    this.behindBytes = 0
  }

  /**
   * The log went back in time (a restore): an idle live stream is sent `message` and counts from
   * `position` on; false when the stream has events waiting or is catching up (the caller ends it,
   * and its client reconnects and is told to refetch).
   */
  restart (message: StreamMessage, position: LogPosition): boolean {
    if (this.closed) return true
    if (this.catching || this.queuedBytes > 0) return false
    this.covered = position
    this.push(frameOf(message), undefined, false)
    return true
  }

  /** Resolves once the stream can take more: nothing queued and less than PACE_BYTES unsent (or closed). */
  async room (): Promise<void> {
    if (this.hasRoom()) return
    await new Promise<void>((resolve) => { this.roomWaiters.push(resolve) })
  }

  close (): void {
    if (this.closed) return
    this.closed = true
    this.queue = []
    this.head = 0
    this.queuedBytes = 0
    this.heartbeatsQueued = 0
    this.behind = []
    this.behindBytes = 0
    due.delete(this)
    this.stopStallWatch()
    this.wakeWaiters()
  }

  /** Writes queued messages while the connection has room (called once per turn for every stream with a queue). */
  flush (): void {
    if (this.closed || this.head === this.queue.length || this.unsent >= PACE_BYTES) return
    try {
      this.transport.batch(() => {
        while (this.head < this.queue.length && this.unsent < PACE_BYTES && !this.closed) {
          const { frame, heartbeat } = this.queue[this.head] as Queued
          this.queue[this.head++] = undefined as unknown as Queued
          this.queuedBytes -= frame.length
          if (heartbeat) this.heartbeatsQueued--
          this.unsent += frame.length
          this.transport.write(frame, () => { this.taken(frame.length) })
        }
      })
    } catch (error) {
      this.options.failed(error)
      return
    }
    if (this.head === this.queue.length) {
      this.queue = []
      this.head = 0
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head)
      this.head = 0
    }
    this.checkStall()
    this.wakeWaiters()
  }

  private push (frame: Buffer, position: LogPosition | undefined, heartbeat: boolean): void {
    this.queue.push({ frame, position, heartbeat })
    this.queuedBytes += frame.length
    if (heartbeat) this.heartbeatsQueued++
    if (due.size === 0) setImmediate(flushDue)
    due.add(this)
    this.checkStall()
  }

  private taken (bytes: number): void {
    this.unsent -= bytes
    this.takenSinceTick = true
    if (this.closed) return
    if (this.head < this.queue.length) {
      if (due.size === 0) setImmediate(flushDue)
      due.add(this)
    } else {
      this.wakeWaiters()
    }
  }

  private hasRoom (): boolean {
    return this.closed || (this.head === this.queue.length && this.unsent < PACE_BYTES)
  }

  private wakeWaiters (): void {
    if (this.roomWaiters.length === 0 || !this.hasRoom()) return
    const waiters = this.roomWaiters
    this.roomWaiters = []
    for (const wake of waiters) wake()
  }

  /**
   * Stops queueing: the queued events are dropped and will be read from the log, from just before
   * the first of them (every event before it that this stream may see was written already).
   */
  private fallBehind (position: LogPosition, bytes: number): void {
    let first: LogPosition | undefined
    const kept: Queued[] = []
    for (let i = this.head; i < this.queue.length; i++) {
      const item = this.queue[i] as Queued
      if (item.position === undefined) {
        kept.push(item)
        continue
      }
      first ??= item.position
      this.owe(item.position, item.frame.length)
      this.queuedBytes -= item.frame.length
    }
    // What is not in the log (a heartbeat, a `cursor:left`, `presence:*`) stays, in order: it is small and bounded.
    this.queue = kept
    this.head = 0
    this.owe(position, bytes)
    const from = first ?? position
    this.covered = { tx: from.tx, id: from.id - 1n }
    this.catching = true
    this.checkStall()
    this.options.fellBehind()
  }

  private owe (position: LogPosition, bytes: number): void {
    this.behindBytes += bytes
    this.behind.push({ first: position, bytes })
    if (this.behind.length >= MAX_BEHIND_RUNS) {
      // Merge neighbours: the runs stay few, and a run read in part counts as read (never more owed than is).
      const merged: BehindRun[] = []
      for (let i = 0; i < this.behind.length; i += 2) {
        const a = this.behind[i] as BehindRun
        const b = this.behind[i + 1]
        merged.push({ first: a.first, bytes: a.bytes + (b?.bytes ?? 0) })
      }
      this.behind = merged
    }
  }

  /** The log read reached these runs: their events are queued now (or not for this stream). */
  private settleBehind (): void {
    let settled = 0
    while (settled < this.behind.length && comparePositions((this.behind[settled] as BehindRun).first, this.covered) <= 0) {
      this.behindBytes -= (this.behind[settled] as BehindRun).bytes
      settled++
    }
    if (settled > 0) this.behind = this.behind.slice(settled)
  }

  /** Something waits on a client that may stop taking it: the stall watch starts (see `stallTick`). */
  private checkStall (): void {
    if (this.closed || this.stallTimer !== undefined || !this.stallEligible()) return
    this.idleMs = 0
    this.takenSinceTick = false
    this.lastTickAt = this.now()
    const tickMs = Math.max(1, Math.ceil(this.options.stallMs / STALL_TICKS))
    // The verdict waits for the end of the loop turn in which the tick fires: after the event loop
    // was blocked (by anything), the connection's reports of bytes taken may be waiting to be read.
    this.stallTimer = setInterval(() => { setImmediate(() => { this.stallTick(tickMs) }) }, tickMs)
    this.stallTimer.unref()
  }

  /** Bytes wait in the connection and at least STALL_BYTES in all: the client may be stalled. With
   *  nothing unsent, the client took all it was given (a slow log read is not its fault). */
  private stallEligible (): boolean {
    return this.unsent > 0 && this.waitingBytes >= STALL_BYTES
  }

  /**
   * Time without anything taken is counted tick by tick, and a tick counts for at most two ticks'
   * time: while this process's event loop was blocked, the client's progress could not be seen, and
   * that time is not held against it.
   */
  private stallTick (tickMs: number): void {
    if (this.closed || this.stallTimer === undefined) return
    if (!this.stallEligible()) {
      this.stopStallWatch()
      return
    }
    const now = this.now()
    this.idleMs = this.takenSinceTick ? 0 : this.idleMs + Math.min(now - this.lastTickAt, 2 * tickMs)
    this.takenSinceTick = false
    this.lastTickAt = now
    if (this.idleMs < this.options.stallMs) return
    this.stopStallWatch()
    this.options.stalled(this.waitingBytes)
  }

  private stopStallWatch (): void {
    if (this.stallTimer !== undefined) clearInterval(this.stallTimer)
    this.stallTimer = undefined
  }
}
