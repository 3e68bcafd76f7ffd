// Requests the HTTP/1.1 parser gives up on before any route sees them — too slow to arrive (408),
// headers too large (431), not HTTP (400) — are answered in the REST error envelope, not Fastify's
// own body, and the connection is closed.
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import { restRefusal, type HttpRefusal } from '../rest/errors.js'

const REFUSALS: Record<string, { reason: HttpRefusal, message: string }> = {
  ERR_HTTP_REQUEST_TIMEOUT: { reason: 'request_timeout', message: 'The request did not arrive in time; send it again.' },
  HPE_HEADER_OVERFLOW: { reason: 'headers_too_large', message: 'The request headers are too large.' }
}
const MALFORMED = { reason: 'bad_request', message: 'The request is not valid HTTP.' } as const

export function answerClientError (error: Error & { code?: string }, socket: Socket): void {
  // A connection the client reset has no one left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) {
    socket.destroy()
    return
  }
  // Once any part of an answer went out, another one would corrupt it: only close.
  if (socket.writable && socket.bytesWritten === 0) {
    const { reason, message } = REFUSALS[error.code ?? ''] ?? MALFORMED
    const { status, body } = restRefusal(reason, message)
    const json = JSON.stringify(body)
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`)
  }
  socket.destroy()
}
