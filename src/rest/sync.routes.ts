// GET /api/sync/subscribe: the Server-Sent Events stream (SPEC Events; DECISIONS §7). Cookie or
// Bearer; headers are flushed at once, so a client that sees them is subscribed. Messages are
// default-type SSE messages whose data is the SPEC envelope and whose `id` is the event log id
// (cursor messages are ephemeral and carry none); `heartbeat` is a named event. Which events a
// stream gets, replay after Last-Event-ID and session ends are the hub's business (src/live).
import type { FastifyInstance } from 'fastify'
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http'
import { AppError } from '../core/errors.js'
import { STREAM_CAP_RETRY_AFTER_S, STREAMS_PER_IP, STREAMS_PER_USER, type StreamCaps } from '../live/stream-caps.js'
import type { StreamHub } from '../live/stream-hub.js'
import type { StreamMessage } from '../live/streams.js'
import { sendAppError } from './errors.js'
import { actorOf } from './identity.js'
import { eventStream } from './responses.js'

/** A client this far behind is cut off (it reconnects with Last-Event-ID and is replayed what it missed). */
const MAX_UNSENT_BYTES = 1 << 20
/** How long an EventSource waits before reconnecting after the stream ends. */
const RECONNECT_DELAY_MS = 2_000
/**
 * `x-accel-buffering: no` keeps a proxy such as nginx from holding events back; `no-transform` keeps
 * a compressing proxy (Next.js rewrites, the `compression` middleware) from gzipping the stream,
 * which holds every event in its compressor (DECISIONS §16).
 */
const STREAM_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' }
const PING_FRAME = ': ping\n\n'

export interface SyncRouteOptions {
  streams: StreamHub
  caps: StreamCaps
}

export function syncRoutes ({ streams, caps }: SyncRouteOptions) {
  // One message object goes to many streams: encode it once.
  const frames = new WeakMap<StreamMessage, string>()
  function frameOf (message: StreamMessage): string {
    let frame = frames.get(message)
    if (frame === undefined) {
      frame = `${message.event === undefined ? '' : `event: ${message.event}\n`}${message.id === undefined ? '' : `id: ${message.id}\n`}data: ${JSON.stringify(message.data)}\n\n`
      frames.set(message, frame)
    }
    return frame
  }

  // Messages written in one turn of the event loop (a batch of events) leave in one write per
  // stream: each stream is corked on its first message and all are uncorked together right after.
  const corked = new Set<ServerResponse>()
  function uncorkAll (): void {
    for (const raw of corked) raw.uncork()
    corked.clear()
  }

  return async function (app: FastifyInstance): Promise<void> {
    app.get('/subscribe', { schema: { summary: 'The event stream (Server-Sent Events)', tags: ['sync'], response: eventStream('The events the caller may see, as Server-Sent Events') }, config: { operation: 'sync.subscribe' } }, async (request, reply) => {
      const actor = actorOf(request)
      // Fastify answers HEAD with this handler. A HEAD gets the stream's headers and no stream: Node
      // writes no body for HEAD, so an opened stream would never flush and would hold a slot.
      if (request.method === 'HEAD') return await reply.headers(STREAM_HEADERS).send()
      const admission = await caps.admit(actor.userId, request.clientIp)
      if (!admission.admitted) {
        const message = admission.limit === 'user'
          ? `Too many open event streams for this account (at most ${STREAMS_PER_USER}); close one and retry in ${STREAM_CAP_RETRY_AFTER_S} seconds.`
          : `Too many open event streams from this address (at most ${STREAMS_PER_IP}); close one and retry in ${STREAM_CAP_RETRY_AFTER_S} seconds.`
        return await sendAppError(reply, new AppError('rate_limited', message, [], STREAM_CAP_RETRY_AFTER_S))
      }
      const raw = reply.raw
      const lastEventId = request.headers['last-event-id']
      // Headers set by the hooks so far (CORS for the configured origin) go out with the stream's own.
      const headers: OutgoingHttpHeaders = {}
      for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) headers[name] = typeof value === 'number' ? String(value) : value
      Object.assign(headers, STREAM_HEADERS)
      // HTTP/2 forbids the Connection header; its streams are multiplexed on a kept-alive session anyway.
      if (request.raw.httpVersionMajor === 1) headers.connection = 'keep-alive'
      // A stream is quiet between heartbeats by design: the idle-connection timeout is not for it.
      request.raw.setTimeout(0)
      reply.hijack()
      raw.writeHead(200, headers)
      raw.write(`retry: ${RECONNECT_DELAY_MS}\n: subscribed\n\n`)
      const handle = streams.open({
        send (message) {
          if (raw.writableEnded || raw.destroyed) return
          if (!corked.has(raw)) {
            if (corked.size === 0) setImmediate(uncorkAll)
            corked.add(raw)
            raw.cork()
          }
          raw.write(frameOf(message))
          if (raw.writableLength > MAX_UNSENT_BYTES) raw.destroy()
        },
        ping () {
          if (!raw.writableEnded && !raw.destroyed) raw.write(PING_FRAME)
        },
        end () {
          if (!raw.writableEnded) raw.end()
        }
      }, {
        userId: actor.userId,
        sessionId: actor.sessionId,
        expiresAt: actor.expiresAt,
        slot: admission.slot,
        lastEventId: typeof lastEventId === 'string' && lastEventId.trim() !== '' ? lastEventId.trim() : undefined
      })
      raw.once('close', () => { handle.close() })
      // The client may have gone while the slot was being claimed; 'close' has then already fired.
      if (raw.destroyed || request.raw.socket.destroyed) handle.close()
      return reply
    })
  }
}
