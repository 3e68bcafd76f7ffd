// An answer sent before its request's body was read reaches the client (DECISIONS §17 "A refusal
// reaches its client"): the gate's 401/403/413/429, a multipart field refused at its first part, a
// quota refusal. The client is still writing its body when the answer arrives; if the server then
// closes the connection with body bytes unread, the kernel answers those bytes with a TCP reset, and
// a client still writing (Node's fetch, a browser) reports a network error (EPIPE, ECONNRESET),
// often before it has read the answer it was sent. So, as nginx's lingering close does, the rest of
// the body is read and dropped after the answer, up to LINGER_BYTES. Past that, nothing more is
// read: the client, whose writes now block, reads its answer and gives up; the connection is cut
// when it has, or once LINGER_IDLE_MS passed without a byte read (and in any case LINGER_MS after
// the answer). Cutting at once when the bound is passed would reset clients that have not read
// their answer yet.
//
// HTTP/1.1: Node itself drops an unread body after the answer (`req._dump()`) but without a bound,
// and when the answer closes the connection (`Connection: close`: refused forms, Fastify's 413, a
// client that asked for it) it destroys the socket as soon as the answer is written, unread bytes or
// not. `destroySoon` is the one call Node's server makes for that close; this module takes it over
// for the sockets it serves: the answer is written in full and the write side ended (FIN), the body
// read and dropped as above, then the socket destroyed.
//
// HTTP/2: the stream's answer is complete (END_STREAM); the rest of its body is read and dropped up
// to the same bound, then the stream is reset with NO_ERROR, which RFC 9113 §8.1 defines as "stop
// sending, the answer stands" (it ends the stream only, not the connection).
import http2, { type Http2ServerRequest } from 'node:http2'
import type { IncomingMessage, ServerResponse } from 'node:http'
import net from 'node:net'

/** How much of a body is read and dropped after an early answer before the connection is cut. */
export const LINGER_BYTES = 1024 * 1024
/** How long that may take in all (nginx's lingering_time is 30 s), and without a byte (its lingering_timeout). */
export const LINGER_MS = 30_000
export const LINGER_IDLE_MS = 5_000
/** How long the connection stays (unread) once LINGER_BYTES were dropped, before it is cut. */
export const LINGER_GRACE_MS = 1_000

const { NGHTTP2_NO_ERROR } = http2.constants

/**
 * Reads and drops the rest of a request's body: `ended` once it ended; `full` when LINGER_BYTES have
 * been read first (from then on no more is read), then `cut` LINGER_GRACE_MS later; `cut` also when
 * a time bound passes first.
 */
function drain (request: IncomingMessage | Http2ServerRequest, on: { ended: () => void, full: () => void, cut: () => void }): void {
  let dropped = 0
  const whole = setTimeout(stop, LINGER_MS)
  const idle = setTimeout(stop, LINGER_IDLE_MS)
  whole.unref()
  idle.unref()
  function clear (): void {
    clearTimeout(whole)
    clearTimeout(idle)
    request.off('data', onData)
  }
  function stop (): void {
    clear()
    on.cut()
  }
  function onData (chunk: Buffer): void {
    dropped += chunk.length
    if (dropped <= LINGER_BYTES) {
      idle.refresh()
      return
    }
    // Nothing is read from now on; the client has a moment to read its answer.
    clear()
    request.pause()
    on.full()
    const grace = setTimeout(on.cut, LINGER_GRACE_MS)
    grace.unref()
    request.once('close', () => { clearTimeout(grace) })
  }
  // Whoever was reading it (a form parser that refused a part) is done with it.
  request.unpipe()
  request.removeAllListeners('data')
  request.on('data', onData)
  request.once('end', () => {
    clear()
    on.ended()
  })
  request.once('close', clear)
  request.resume()
}

interface Lingering { closeWhenDrained: boolean }
const lingering = new WeakMap<net.Socket, Lingering>()
const takenOver = new WeakSet<net.Socket>()

/**
 * HTTP/1.1: call for each request as it arrives. When its answer is complete before its body is,
 * the rest is read and dropped within the bounds above; a connection the answer closes is closed
 * after that, a kept-alive one serves its next request.
 */
export function lingerAfterEarlyAnswer (request: IncomingMessage, response: ServerResponse): void {
  // Most requests have no body (and cost nothing here).
  const headers = request.headers
  if (headers['transfer-encoding'] === undefined && (headers['content-length'] === undefined || headers['content-length'] === '0')) return
  const socket = request.socket
  if (!takenOver.has(socket)) {
    takenOver.add(socket)
    socket.destroySoon = lingeringDestroySoon
  }
  // 'prefinish': the answer is all queued, and Node has not yet dropped the body its own way (which
  // would stop its bytes from reaching the stream, so they could not be counted).
  response.once('prefinish', () => {
    if (request.complete || request.destroyed) return
    const state: Lingering = { closeWhenDrained: false }
    lingering.set(socket, state)
    drain(request, {
      ended: () => {
        lingering.delete(socket)
        if (state.closeWhenDrained) socket.destroy()
      },
      // Stop reading from the socket too (the request stream alone would still buffer what arrives).
      full: () => { socket.pause() },
      cut: () => { socket.destroy() }
    })
  })
}

/** Node's server calls this to close a connection once an answer that ends it is written. */
function lingeringDestroySoon (this: net.Socket): void {
  const state = lingering.get(this)
  if (state === undefined) {
    net.Socket.prototype.destroySoon.call(this)
    return
  }
  // The answer is written in full, then FIN; the body is still read until it is drained.
  state.closeWhenDrained = true
  this.end()
}

/** HTTP/2: call for each request as it arrives; its stream is drained as above after an early answer. */
export function lingerStreamAfterEarlyAnswer (request: Http2ServerRequest): void {
  const stream = request.stream
  if (stream.endAfterHeaders) return
  // The stream's own 'finish': its answer is sent in full (the response's 'finish' waits for the stream to close).
  stream.once('finish', () => {
    if (stream.destroyed || stream.state.remoteClose === 1 || request.complete) return
    // A body no one began to read: Node resets the stream with NO_ERROR itself, at once.
    if (stream.readableFlowing === null) return
    const reset = (): void => { if (!stream.destroyed) stream.close(NGHTTP2_NO_ERROR) }
    drain(request, { ended: () => {}, full: reset, cut: reset })
  })
}
