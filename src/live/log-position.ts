// Where an event stands in the delivery order: its writing transaction, then its id (see the
// migration 2026-11-25T12-00-00_event_log_positions). Delivery, replay and the prune horizon all
// count in positions; on the wire a position is the SSE `id`, `<tx>-<id>`, which clients send back
// as Last-Event-ID without reading it.
export interface LogPosition {
  readonly tx: bigint
  readonly id: bigint
}

export const LOG_START: LogPosition = { tx: 0n, id: 0n }

export function comparePositions (a: LogPosition, b: LogPosition): number {
  if (a.tx !== b.tx) return a.tx < b.tx ? -1 : 1
  if (a.id !== b.id) return a.id < b.id ? -1 : 1
  return 0
}

export function formatPosition (position: LogPosition): string {
  return `${position.tx}-${position.id}`
}

/** The largest transaction id (xid8, unsigned) and event id (bigint, signed) the log can hold. */
const MAX_TX = 2n ** 64n - 1n
const MAX_ID = 2n ** 63n - 1n

/**
 * The position an SSE id names; undefined for anything this service never sent, numbers past what
 * the log's columns hold included (such an id could never be compared in SQL, and a client sending
 * it would be cut off and reconnect with it forever; it gets `sync:reset` instead).
 */
export function parsePosition (text: string): LogPosition | undefined {
  const match = /^(\d{1,20})-(\d{1,19})$/.exec(text)
  if (match === null) return undefined
  const position = { tx: BigInt(match[1] ?? '0'), id: BigInt(match[2] ?? '0') }
  return position.tx <= MAX_TX && position.id <= MAX_ID ? position : undefined
}
