// The bytes of one SSE message (SPEC Events; DECISIONS §7): default-type messages whose data is the
// JSON envelope and whose `id` is the event's log position (cursor messages are ephemeral and carry
// none); `heartbeat` is a named event. One message object goes to many streams: it is encoded once,
// and every stream writes (and, while it is behind, holds) the same bytes.
import type { StreamMessage } from './streams.js'

const frames = new WeakMap<StreamMessage, Buffer>()

export function frameOf (message: StreamMessage): Buffer {
  let frame = frames.get(message)
  if (frame === undefined) {
    frame = Buffer.from(`${message.event === undefined ? '' : `event: ${message.event}\n`}${message.id === undefined ? '' : `id: ${message.id}\n`}data: ${JSON.stringify(message.data)}\n\n`)
    frames.set(message, frame)
  }
  return frame
}

/** An SSE comment, which clients ignore: it keeps proxies from cutting a quiet stream (DECISIONS §16). */
export const PING_FRAME = Buffer.from(': ping\n\n')
