// GET /api/sync/subscribe: the Server-Sent Events stream (SPEC Events; DECISIONS §7). Cookie or
// Bearer; headers are flushed at once, so a client that sees them is subscribed. What a stream is
// sent, how it is encoded and paced by its client (DECISIONS §17), replay after Last-Event-ID and
// session ends are the hub's business (src/live): this route admits, opens and hands it the response.
import type { FastifyInstance } from 'fastify'
import type { OutgoingHttpHeaders } from 'node:http'
import { AppError } from '../core/errors.js'
import { STREAM_CAP_RETRY_AFTER_S, STREAMS_PER_IP, STREAMS_PER_USER, type StreamCaps } from '../live/stream-caps.js'
import type { StreamHub } from '../live/stream-hub.js'
import { sendAppError } from './errors.js'
import { actorOf } from './identity.js'
import { eventStream } from './responses.js'

/** How long an EventSource waits before reconnecting after the stream ends. */
const RECONNECT_DELAY_MS = 2_000
/**
 * `x-accel-buffering: no` keeps a proxy such as nginx from holding events back; `no-transform` keeps
 * a compressing proxy (Next.js rewrites, the `compression` middleware) from gzipping the stream,
 * which holds every event in its compressor (DECISIONS §16).
 */
const STREAM_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' }

export interface SyncRouteOptions {
  streams: StreamHub
  caps: StreamCaps
}

export function syncRoutes ({ streams, caps }: SyncRouteOptions) {
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
      // HTTP/1.1's ServerResponse and HTTP/2's compatibility response both call a write's callback once
      // the connection took its bytes (HTTP/2: within the stream's flow-control window).
      const handle = streams.open({
        write (bytes, taken) {
          if (!raw.writableEnded && !raw.destroyed) raw.write(bytes, taken)
        },
        batch (writes) {
          raw.cork()
          try {
            writes()
          } finally {
            raw.uncork()
          }
        },
        end () {
          if (!raw.writableEnded) raw.end()
        },
        abort () {
          raw.destroy()
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
