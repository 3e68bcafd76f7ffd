// HTTP/2 sessions and streams held to the bounds HTTP/1.1 connections and requests have
// (listener.ts), which Node's HTTP/2 server does not give by itself: its own timeout is one per
// session, refreshed by any frame (a PING included) and ending in a destroy with no GOAWAY.
//
// - A session may have MAX_CONCURRENT_STREAMS streams open at once (Node's default: unlimited).
// - A session with no open stream gets a GOAWAY and is closed: after `headersMs` if it never opened
//   one (as a new HTTP/1.1 connection must send its headers), after `keepAliveMs` otherwise. PINGs
//   do not keep it open.
// - A stream whose request body is still arriving is answered 408 (in the REST envelope, as the
//   HTTP/1.1 parser answers) when no byte of it came for `bodyIdleMs` while the server was ready to
//   read, or when the whole request took longer than `requestMs`; a stream that already began its
//   answer is reset instead (NO_ERROR if the answer was complete: RFC 9113 §8.1, else CANCEL). A stream's idle timer counts only its own frames, so a
//   session kept busy by PINGs does not hide a stalled body.
// - Once the request is in, a stream with no traffic either way for `idleMs` is reset with CANCEL
//   (a client that stopped reading its answer); event streams turn that off for themselves.
import http2, { type Http2ServerRequest, type Http2Stream, type ServerHttp2Session } from 'node:http2'
import type { HttpTimeouts } from './listener.js'
import { timeoutRefusal, type Lateness } from './client-errors.js'
import type { RefusalWriter } from './refusals.js'
import { noteEdgeRefusal } from './request-end.js'
import { requestIdOfRaw } from './request-id.js'

/** Streams one session may have open at once: a client needs no more to saturate a connection,
 *  and each open stream holds memory until it ends. */
export const MAX_CONCURRENT_STREAMS = 100

const { NGHTTP2_CANCEL, NGHTTP2_NO_ERROR } = http2.constants

/** What the listener knows of a session: how many streams it has open. */
export interface SessionState { open: number }

/** Sends idle sessions a GOAWAY; returns the open sessions (the listener drains them on close). */
export function trackSessions (server: http2.Http2Server, timeouts: HttpTimeouts): Map<ServerHttp2Session, SessionState> {
  const sessions = new Map<ServerHttp2Session, SessionState>()
  server.on('session', (session) => {
    const state: SessionState = { open: 0 }
    sessions.set(session, state)
    let idle: NodeJS.Timeout | undefined = setTimeout(goAway, timeouts.headersMs, session)
    idle.unref()
    session.on('stream', (stream: Http2Stream) => {
      state.open++
      clearTimeout(idle)
      idle = undefined
      stream.once('close', () => {
        if (--state.open > 0 || session.closed) return
        idle = setTimeout(goAway, timeouts.keepAliveMs, session)
        idle.unref()
      })
    })
    session.once('close', () => {
      clearTimeout(idle)
      sessions.delete(session)
    })
  })
  return sessions
}

/** GOAWAY (NO_ERROR), then the session ends once its open streams have (none, when idle). */
function goAway (session: ServerHttp2Session): void {
  if (!session.closed && !session.destroyed) session.close()
}

/** Puts one request's stream under the timeouts above; called before the request is handled. */
export function guardStream (request: Http2ServerRequest, timeouts: HttpTimeouts, write: RefusalWriter): void {
  const stream = request.stream
  if (stream.endAfterHeaders) {
    stream.setTimeout(timeouts.idleMs, resetIdleStream)
    return
  }
  const whole = setTimeout(() => { if (!requestEnded(stream)) refuseStalled(request, 'request', write) }, timeouts.requestMs)
  whole.unref()
  stream.once('close', () => { clearTimeout(whole) })
  stream.setTimeout(timeouts.bodyIdleMs)
  stream.on('timeout', function onBodyTimeout () {
    if (requestEnded(stream)) {
      stream.off('timeout', onBodyTimeout)
      stream.setTimeout(timeouts.idleMs, resetIdleStream)
    } else if (readingBehind(request)) {
      // The server, not the client, is behind (the body waits in a buffer, or no one reads it yet).
      stream.setTimeout(timeouts.bodyIdleMs)
    } else {
      refuseStalled(request, 'body', write)
    }
  })
}

/** The client sent END_STREAM: the whole request is here, read or not. */
function requestEnded (stream: Http2Stream): boolean {
  return stream.destroyed || stream.state.remoteClose === 1
}

/** Body bytes wait unread, or the reader is paused or has not started: the silence is ours. */
function readingBehind (request: Http2ServerRequest): boolean {
  const stream = request.stream
  return stream.readableFlowing !== true || stream.readableLength > 0 || request.readableLength > 0
}

function refuseStalled (request: Http2ServerRequest, late: Lateness, write: RefusalWriter): void {
  const stream = request.stream
  if (stream.closed || stream.destroyed) return
  if (stream.headersSent) {
    // An answer already sent in full stands (RFC 9113 §8.1: NO_ERROR); one half sent is abandoned.
    stream.close(stream.state.localClose === 1 ? NGHTTP2_NO_ERROR : NGHTTP2_CANCEL)
    return
  }
  const { status, contentType, body } = timeoutRefusal(late, write)
  // The request ends with this status (request-end.ts), whatever Fastify makes of its cut body.
  noteEdgeRefusal(request, status)
  stream.respond({ ':status': status, 'content-type': contentType, 'content-length': Buffer.byteLength(body), 'x-request-id': requestIdOfRaw(request) })
  stream.end(body)
  // RST_STREAM NO_ERROR once the answer is out: the client may stop sending, the answer stands.
  stream.close(NGHTTP2_NO_ERROR)
}

function resetIdleStream (this: Http2Stream): void {
  if (!this.closed && !this.destroyed) this.close(NGHTTP2_CANCEL)
}
