// The body idle timeout of HTTP/1.1 requests: a request whose body has had no byte for `idleMs`
// while the server was ready to read it is answered 408 and its connection closed. Node bounds only
// the whole request (requestTimeout), so without this a dead upload holds its socket as long as a
// slow one may take; with it, a slow upload that keeps moving passes and a stalled one is cut.
// (HTTP/2 streams have the same rule in http2-sessions.ts.)
//
// "Ready to read": the handler consumes the body (flowing) and nothing received waits unread. While
// the app has not started reading (the admission gate still deciding) or has paused (its storage is
// slower than the client), the silence is the server's, and the clock starts again.
//
// One sweep a second over the requests whose body is still arriving, as Node checks its own request
// timeouts; a request is watched from its headers until its response closes.
import type { IncomingMessage, ServerResponse } from 'node:http'
import { BODY_IDLE, refuseOnSocket } from './client-errors.js'
import type { RefusalWriter } from './refusals.js'
import { requestIdOfRaw } from './request-id.js'

const SWEEP_EVERY_MS = 1_000

interface Progress { bytesRead: number, since: number }

export interface BodyIdleWatch {
  /** Watches the body of a request that has one, until its response closes. */
  watch (request: IncomingMessage, response: ServerResponse): void
  stop (): void
}

/** `write` words the 408 (REST's envelope). */
export function watchBodyIdle (idleMs: number, write: RefusalWriter): BodyIdleWatch {
  // Progress is noted by the first sweep that sees a request, so a request answered within a second
  // costs one map entry and one listener.
  const watched = new Map<ServerResponse, Progress | undefined>()
  let sweep: NodeJS.Timeout | undefined

  function forget (this: ServerResponse): void {
    watched.delete(this)
  }

  function check (): void {
    const now = Date.now()
    for (const [response, progress] of watched) {
      const request = response.req
      const socket = request.socket
      if (request.complete || socket.destroyed) {
        watched.delete(response)
        continue
      }
      const bytesRead = socket.bytesRead
      const serverBehind = request.readableFlowing !== true || request.readableLength > 0
      if (progress === undefined) {
        watched.set(response, { bytesRead, since: now })
      } else if (serverBehind || bytesRead !== progress.bytesRead) {
        progress.bytesRead = bytesRead
        progress.since = now
      } else if (now - progress.since >= idleMs) {
        watched.delete(response)
        // Node's own request timeout answers the same way: the refusal, then the connection closes.
        if (!response.headersSent) refuseOnSocket(socket, BODY_IDLE, write, requestIdOfRaw(request), request)
        socket.destroy()
      }
    }
    if (watched.size === 0) {
      clearInterval(sweep)
      sweep = undefined
    }
  }

  return {
    watch (request, response) {
      const headers = request.headers
      if (headers['transfer-encoding'] === undefined && (headers['content-length'] === undefined || headers['content-length'] === '0')) return
      watched.set(response, undefined)
      response.once('close', forget)
      if (sweep === undefined) {
        sweep = setInterval(check, SWEEP_EVERY_MS)
        sweep.unref()
      }
    },
    stop () {
      clearInterval(sweep)
      sweep = undefined
      watched.clear()
    }
  }
}
