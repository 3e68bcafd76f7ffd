// Requests the HTTP/1.1 parser gives up on before any route sees them — too slow to arrive (408),
// headers too large (431), not HTTP (400) — are answered in the REST envelope (the writer REST hands
// the edge, refusals.ts), not Fastify's own body, and the connection is closed. The listener's own
// timeouts (a body that stops arriving, an HTTP/2 request too slow to arrive) answer with the same 408.
// Each refusal is one ended request (request-end.ts): the request in flight on the connection, when
// there is one, ends with the refusal's status; otherwise the refusal is reported on its own.
import { STATUS_CODES, type IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import type { EdgeRefusal, RefusalReply, RefusalWriter } from './refusals.js'
import { noteEdgeRefusal, requestInFlight, type RequestEnds } from './request-end.js'
import { newRequestId, requestIdOfRaw } from './request-id.js'

/** Code of the error the listener reports when a request body stops arriving (body-idle.ts). */
export const BODY_IDLE = 'ERR_HTTP_BODY_IDLE'

const REFUSALS: Record<string, { reason: EdgeRefusal, message: string }> = {
  ERR_HTTP_REQUEST_TIMEOUT: { reason: 'request_timeout', message: 'The request did not arrive in time; send it again.' },
  [BODY_IDLE]: { reason: 'request_timeout', message: 'The request body stopped arriving; send it again.' },
  HPE_HEADER_OVERFLOW: { reason: 'headers_too_large', message: 'The request headers are too large.' }
}
const MALFORMED = { reason: 'bad_request', message: 'The request is not valid HTTP.' } as const

/** How a request was too slow: as a whole (the request bound) or its body stopped arriving. */
export type Lateness = 'request' | 'body'

/** The 408 answer for a request too slow to arrive. */
export function timeoutRefusal (late: Lateness, write: RefusalWriter): RefusalReply {
  const { reason, message } = REFUSALS[late === 'body' ? BODY_IDLE : 'ERR_HTTP_REQUEST_TIMEOUT']!
  return write(reason, message)
}

/** Fastify's clientErrorHandler: answers with `write`'s refusal while nothing of an answer went out. */
export function clientErrorAnswer (write: RefusalWriter, ends: RequestEnds) {
  return function answerClientError (error: Error & { code?: string }, socket: Socket): void {
    // A request in flight (Node's whole-request timeout) ends with the refusal, or as abandoned.
    const request = requestInFlight(socket)
    // A connection the client reset has no one left to answer.
    if (error.code === 'ECONNRESET' || socket.destroyed) {
      socket.destroy()
      return
    }
    // Once any part of an answer went out, another one would corrupt it: only close.
    if (socket.bytesWritten === 0) {
      if (request !== undefined) {
        refuseOnSocket(socket, error.code, write, requestIdOfRaw(request))
      } else {
        // No request was read whole, so there is no client id to keep: the refusal carries a new one.
        const requestId = newRequestId()
        const status = refuseOnSocket(socket, error.code, write, requestId)
        if (status !== undefined) ends.refusedBeforeRequest(status, requestId, socket)
      }
    }
    socket.destroy()
  }
}

/** Writes the refusal for `code` as a whole HTTP/1.1 response that closes the connection; the
 *  request in flight, if any, ends with its status. Returns the status, or undefined when the
 *  socket could not take it. */
export function refuseOnSocket (socket: Socket, code: string | undefined, write: RefusalWriter, requestId: string, request: IncomingMessage | undefined = requestInFlight(socket)): number | undefined {
  if (!socket.writable) return undefined
  const { reason, message } = REFUSALS[code ?? ''] ?? MALFORMED
  const { status, contentType, body } = write(reason, message)
  if (request !== undefined) noteEdgeRefusal(request, status)
  socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nConnection: close\r\nContent-Type: ${contentType}\r\nX-Request-Id: ${requestId}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
  return status
}
