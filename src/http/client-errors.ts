// Requests the HTTP/1.1 parser gives up on before any route sees them — too slow to arrive (408),
// headers too large (431), not HTTP (400) — are answered in the REST envelope (the writer REST hands
// the edge, refusals.ts), not Fastify's own body, and the connection is closed. The listener's own
// timeouts (a body that stops arriving, an HTTP/2 request too slow to arrive) answer with the same 408.
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { EdgeRefusal, RefusalReply, RefusalWriter } from './refusals.js'
import { newRequestId } from './request-id.js'

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
export function clientErrorAnswer (write: RefusalWriter) {
  return function answerClientError (error: Error & { code?: string }, socket: Socket): void {
    // A connection the client reset has no one left to answer.
    if (error.code === 'ECONNRESET' || socket.destroyed) {
      socket.destroy()
      return
    }
    // Once any part of an answer went out, another one would corrupt it: only close.
    // No request was read whole, so there is no client id to keep: the refusal carries a new one.
    if (socket.bytesWritten === 0) refuseOnSocket(socket, error.code, write)
    socket.destroy()
  }
}

/** Writes the refusal for `code` as a whole HTTP/1.1 response that closes the connection. */
export function refuseOnSocket (socket: Socket, code: string | undefined, write: RefusalWriter, requestId = newRequestId()): void {
  if (!socket.writable) return
  const { reason, message } = REFUSALS[code ?? ''] ?? MALFORMED
  const { status, contentType, body } = write(reason, message)
  socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nConnection: close\r\nContent-Type: ${contentType}\r\nX-Request-Id: ${requestId}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
}
