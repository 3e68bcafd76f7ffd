// The one listening port of the service (DECISIONS §14): HTTP/1.1 and HTTP/2 side by side. In clear
// text a connection is HTTP/2 when it opens with the HTTP/2 preface (prior knowledge: what gRPC
// clients, grpcurl and load balancers send), HTTP/1.1 otherwise; with TLS configured, ALPN decides
// (`h2` or `http/1.1`) and plain-text connections are refused. Node cannot serve both protocols on
// one clear-text port by itself, so this server accepts every connection and hands it to an inner
// HTTP/1.1 or HTTP/2 server, which never listen themselves.
//
// It also owns what a connection may cost (timeouts; HTTP/2 sessions and streams get the same bounds
// in http2-sessions.ts, HTTP/1.1 request bodies their idle timeout in body-idle.ts), that an answer
// sent before its body arrived reaches the client (lingering-close.ts), and how the port closes
// (draining-close.ts): every request already sent is answered, then whatever is still open after
// `drainMs` is cut.
import http from 'node:http'
import http2 from 'node:http2'
import net from 'node:net'
import tls from 'node:tls'
import { watchBodyIdle } from './body-idle.js'
import { closeByDraining } from './draining-close.js'
import { guardStream, MAX_CONCURRENT_STREAMS, trackSessions } from './http2-sessions.js'
import { lingerAfterEarlyAnswer, lingerStreamAfterEarlyAnswer } from './lingering-close.js'
import type { RefusalWriter } from './refusals.js'

/** How long a client may take, each in milliseconds (README: Configuration). */
export interface HttpTimeouts {
  /** To send a request's headers; also how long a new connection (or HTTP/2 session) may stay without a request. */
  readonly headersMs: number
  /** To send a whole request, body included (HTTP/1.1: Node's requestTimeout): a stalled body gets 408. */
  readonly requestMs: number
  /** A request body with no byte for this long, while the server waits for it, gets 408. */
  readonly bodyIdleMs: number
  /** An idle keep-alive connection (or HTTP/2 session with no open stream) is closed after this. */
  readonly keepAliveMs: number
  /** A connection (HTTP/2: a stream) with no traffic either way for this long is cut: a client that
   *  stops reading its answer. Event streams turn it off for themselves (they are quiet by design). */
  readonly idleMs: number
}

export interface ListenerOptions {
  timeouts: HttpTimeouts
  /** PEM certificate chain and key: TLS with ALPN instead of clear text. */
  tls?: { cert: Buffer, key: Buffer } | undefined
  /** On close, connections still open after this long are cut. */
  drainMs: number
  /** Words the 408 of a request too slow to arrive (REST's envelope: refusals.ts). */
  refuse: RefusalWriter
}

export type RequestHandler = (request: http.IncomingMessage | http2.Http2ServerRequest, response: http.ServerResponse | http2.Http2ServerResponse) => void

const HTTP2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n')
/** Node checks request and header timeouts this often (its default, 30 s, would blur them). */
const TIMEOUT_CHECK_EVERY_MS = 1_000

export function createListener (handler: RequestHandler, options: ListenerOptions): net.Server {
  const { timeouts } = options
  const bodies = watchBodyIdle(timeouts.bodyIdleMs, options.refuse)
  const http1 = http.createServer({
    headersTimeout: timeouts.headersMs,
    requestTimeout: timeouts.requestMs,
    keepAliveTimeout: timeouts.keepAliveMs,
    connectionsCheckingInterval: TIMEOUT_CHECK_EVERY_MS
  }, (request, response) => {
    bodies.watch(request, response)
    lingerAfterEarlyAnswer(request, response)
    handler(request, response)
  })
  http1.setTimeout(timeouts.idleMs)
  // Node starts tracking an HTTP/1.1 server's connections (what request and header timeouts and
  // closeIdleConnections work on) when the server emits 'listening'; this one never listens itself.
  http1.emit('listening')

  const http2Server = http2.createServer({ settings: { maxConcurrentStreams: MAX_CONCURRENT_STREAMS } }, (request, response) => {
    guardStream(request, timeouts, options.refuse)
    lingerStreamAfterEarlyAnswer(request)
    handler(request, response)
  })
  const sessions = trackSessions(http2Server, timeouts)

  let server: net.Server
  if (options.tls === undefined) {
    server = net.createServer((socket) => { sniff(socket, http1, http2Server, timeouts.headersMs) })
  } else {
    server = tls.createServer({ ...options.tls, ALPNProtocols: ['h2', 'http/1.1'], handshakeTimeout: timeouts.headersMs })
    server.on('secureConnection', (socket: tls.TLSSocket) => {
      if (socket.alpnProtocol === 'h2') http2Server.emit('connection', socket)
      else http1.emit('connection', socket)
    })
    // A failed handshake (a plain-text client, a bad certificate) only ends that connection.
    server.on('tlsClientError', (_error, socket) => { socket.destroy() })
  }
  // Fastify listens for the HTTP/1.1 parser's errors (bad requests, timeouts) on the server it was given.
  http1.on('clientError', (error, socket) => { server.emit('clientError', error, socket) })

  closeByDraining(server, { http1, sessions }, options.drainMs, () => {
    bodies.stop()
    // Stops the inner server's timeout checks; it was never listening, which its callback reports.
    http1.close(ignore)
  })
  return server
}

/** Reads the first bytes of a clear-text connection and hands it to the server of its protocol. */
function sniff (socket: net.Socket, http1: http.Server, http2Server: http2.Http2Server, silenceMs: number): void {
  let seen: Buffer = Buffer.alloc(0)
  // A connection that never says anything is dropped like one that never finishes its headers.
  const onSilence = (): void => { socket.destroy() }
  socket.setTimeout(silenceMs)
  socket.on('timeout', onSilence)
  socket.on('error', ignore)
  socket.on('readable', onReadable)

  function onReadable (): void {
    const chunk = socket.read() as Buffer | null
    if (chunk === null) return
    seen = seen.length === 0 ? chunk : Buffer.concat([seen, chunk])
    const length = Math.min(seen.length, HTTP2_PREFACE.length)
    const mayBeHttp2 = seen.subarray(0, length).equals(HTTP2_PREFACE.subarray(0, length))
    if (mayBeHttp2 && seen.length < HTTP2_PREFACE.length) return // not enough to tell yet
    socket.off('readable', onReadable)
    socket.off('error', ignore)
    socket.off('timeout', onSilence)
    socket.setTimeout(0)
    socket.unshift(seen)
    if (mayBeHttp2) http2Server.emit('connection', socket)
    else http1.emit('connection', socket)
  }
}

function ignore (): void {}
