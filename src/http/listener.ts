// The one listening port of the service (DECISIONS §14): HTTP/1.1 and HTTP/2 side by side. In clear
// text a connection is HTTP/2 when it opens with the HTTP/2 preface (prior knowledge: what gRPC
// clients, grpcurl and load balancers send), HTTP/1.1 otherwise; with TLS configured, ALPN decides
// (`h2` or `http/1.1`) and plain-text connections are refused. Node cannot serve both protocols on
// one clear-text port by itself, so this server accepts every connection and hands it to an inner
// HTTP/1.1 or HTTP/2 server, which never listen themselves.
//
// It also owns what a connection may cost (timeouts) and how the port closes: `close()` stops
// accepting, lets requests that already arrived be read, closes idle connections, lets busy ones
// finish their answer (the app marks it `Connection: close`) and sends HTTP/2 sessions a GOAWAY;
// whatever is still open after `drainMs` is cut.
import http from 'node:http'
import http2 from 'node:http2'
import net from 'node:net'
import tls from 'node:tls'

/** How long a client may take, each in milliseconds (README: Configuration). */
export interface HttpTimeouts {
  /** To send a request's headers; also how long a new connection may stay silent. */
  readonly headersMs: number
  /** To send a whole HTTP/1.1 request, body included (Node's requestTimeout): a stalled body gets 408. */
  readonly requestMs: number
  /** An idle keep-alive connection (or HTTP/2 session) is closed after this. */
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
}

export type RequestHandler = (request: http.IncomingMessage | http2.Http2ServerRequest, response: http.ServerResponse | http2.Http2ServerResponse) => void

const HTTP2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n')
/** Node checks request and header timeouts this often (its default, 30 s, would blur them). */
const TIMEOUT_CHECK_EVERY_MS = 1_000
/** While draining, connections that turned idle since the last look are closed this often. */
const DRAIN_SWEEP_EVERY_MS = 100

export function createListener (handler: RequestHandler, options: ListenerOptions): net.Server {
  const { timeouts } = options
  const http1 = http.createServer({
    headersTimeout: timeouts.headersMs,
    requestTimeout: timeouts.requestMs,
    keepAliveTimeout: timeouts.keepAliveMs,
    connectionsCheckingInterval: TIMEOUT_CHECK_EVERY_MS
  }, handler)
  http1.setTimeout(timeouts.idleMs)
  // Node starts tracking an HTTP/1.1 server's connections (what request and header timeouts and
  // closeIdleConnections work on) when the server emits 'listening'; this one never listens itself.
  http1.emit('listening')

  const http2Server = http2.createServer({}, handler)
  http2Server.setTimeout(timeouts.idleMs)
  const sessions = new Set<http2.ServerHttp2Session>()
  http2Server.on('session', (session) => {
    sessions.add(session)
    session.once('close', () => { sessions.delete(session) })
    // An HTTP/2 session with no frames for this long goes the way of an idle keep-alive connection.
    session.setTimeout(timeouts.keepAliveMs, () => { session.close() })
  })

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

  const stopAccepting = server.close.bind(server)
  server.close = function close (callback?: (error?: Error) => void): net.Server {
    stopAccepting(callback)
    // One turn of the event loop first: a request that reached this host before the close is read
    // and becomes busy, so it is answered instead of being cut as an idle connection.
    setImmediate(() => {
      http1.closeIdleConnections()
      for (const session of sessions) session.close()
    })
    const sweep = setInterval(() => { http1.closeIdleConnections() }, DRAIN_SWEEP_EVERY_MS)
    const deadline = setTimeout(() => {
      http1.closeAllConnections()
      for (const session of sessions) session.destroy()
    }, options.drainMs)
    sweep.unref()
    deadline.unref()
    server.once('close', () => {
      clearInterval(sweep)
      clearTimeout(deadline)
      // Stops the inner server's timeout checks; it was never listening, which its callback reports.
      http1.close(ignore)
    })
    return server
  }
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
