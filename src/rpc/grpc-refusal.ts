// A gRPC or gRPC-Web call refused before any Connect handler runs (the gate, an unknown method, a
// request Fastify itself refuses) is answered "trailers-only", as the gRPC HTTP/2 protocol defines it:
// HTTP 200 and one HEADERS frame that carries grpc-status and grpc-message and ends the stream.
// Strict clients (grpc-go, and the C-core stack behind Python, Ruby, C#, PHP and Objective-C) read a
// status only from trailers or from such a frame. Node's compatibility API cannot send one: Fastify
// writes the head and then ends the response, which over HTTP/2 becomes HEADERS without END_STREAM
// and an empty DATA frame, and those clients end the call `UNKNOWN "Stream removed"`. So over HTTP/2
// the frame is sent on the raw stream. Over HTTP/1.1 (gRPC-Web) a response made of headers alone is
// already what the protocol asks.
import type { ConnectError } from '@connectrpc/connect'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http'
import type { Http2ServerRequest } from 'node:http2'
import { rpcOutcomeOf } from './outcome.js'

const GRPC_CONTENT_TYPE = /^application\/grpc(-web)?([+;]|$)/i

/** Whether the call speaks gRPC or gRPC-Web (which take their status in headers, not a JSON body). */
export function isGrpcCall (request: FastifyRequest): boolean {
  return GRPC_CONTENT_TYPE.test(request.headers['content-type'] ?? '')
}

export async function sendGrpcRefusal (request: FastifyRequest, reply: FastifyReply, error: ConnectError): Promise<FastifyReply> {
  // The call's code for the access line, the metrics and the span (outcome.ts); the status class a
  // Connect reply of it would have, whatever the HTTP 200 that carries it here.
  request.rpcOutcome ??= rpcOutcomeOf(error.code)
  const headers: OutgoingHttpHeaders = {}
  // What the hooks set so far (CORS, rate-limit headers), then the error's own metadata (Retry-After).
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) headers[name] = value
  error.metadata.forEach((value, name) => { headers[name] = value })
  headers['content-type'] = request.headers['content-type']
  headers['grpc-status'] = String(error.code)
  headers['grpc-message'] = encodeURIComponent(error.rawMessage)

  // The app is typed for node:http; the listener (src/http/listener.ts) also hands it HTTP/2 requests.
  const raw = request.raw as IncomingMessage | Http2ServerRequest
  if (!('stream' in raw)) return await reply.code(200).headers(headers).send()
  reply.hijack()
  const stream = raw.stream
  // Fastify still logs the request as completed when the stream closes.
  if (!stream.destroyed && !stream.headersSent) stream.respond({ ...headers, ':status': 200 }, { endStream: true })
  return reply
}
