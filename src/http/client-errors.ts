// Requests the HTTP/1.1 parser gives up on before any route sees them — too slow to arrive (408),
// headers too large (431), not HTTP (400) — are answered in the REST error envelope, not Fastify's
// own body, and the connection is closed.
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'

const ANSWERS: Record<string, { status: number, error: string, message: string }> = {
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, error: 'RequestTimeout', message: 'The request did not arrive in time; send it again.' },
  HPE_HEADER_OVERFLOW: { status: 431, error: 'RequestHeaderFieldsTooLarge', message: 'The request headers are too large.' }
}
const MALFORMED = { status: 400, error: 'BadRequest', message: 'The request is not valid HTTP.' }

export function answerClientError (error: Error & { code?: string }, socket: Socket): void {
  // A connection the client reset has no one left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) {
    socket.destroy()
    return
  }
  // Once any part of an answer went out, another one would corrupt it: only close.
  if (socket.writable && socket.bytesWritten === 0) {
    const answer = ANSWERS[error.code ?? ''] ?? MALFORMED
    const body = JSON.stringify({ error: answer.error, message: answer.message })
    socket.write(`HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? ''}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
  }
  socket.destroy()
}
