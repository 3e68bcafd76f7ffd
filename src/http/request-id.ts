// X-Request-Id (DECISIONS §15): a client's id of at most 64 characters of [A-Za-z0-9._:-] is kept,
// anything else (or none) is replaced by a generated one. It is Fastify's `request.id` (so every log
// line of the request carries it as `reqId`, and audit rows take it from there), it is sent back on
// every response of both transports, and REST puts it in 5xx bodies.
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { Http2ServerRequest } from 'node:http2'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'

export const REQUEST_ID_HEADER = 'x-request-id'

const KEEPABLE = /^[A-Za-z0-9._:-]{1,64}$/

/** Where the id is remembered on the raw request, for the listener's own refusals (a 408). */
const ID = Symbol('requestId')
type Marked = (IncomingMessage | Http2ServerRequest) & { [ID]?: string }

export function newRequestId (): string {
  return randomUUID()
}

/** The client's id when it may be kept, else a new one. */
export function keptOrNewRequestId (sent: string | string[] | undefined): string {
  return typeof sent === 'string' && KEEPABLE.test(sent) ? sent : newRequestId()
}

/** Fastify's `genReqId`: the id of a request, remembered on it. */
export function genReqId (raw: IncomingMessage | Http2ServerRequest): string {
  const id = keptOrNewRequestId(raw.headers[REQUEST_ID_HEADER])
  ;(raw as Marked)[ID] = id
  return id
}

/** The id Fastify gave a raw request, or one for a request Fastify has not seen yet. */
export function requestIdOfRaw (raw: IncomingMessage | Http2ServerRequest): string {
  return (raw as Marked)[ID] ?? genReqId(raw)
}

export function answerRequestId (request: FastifyRequest, reply: FastifyReply): void {
  void reply.header(REQUEST_ID_HEADER, request.id)
}

/** Every response that passes Fastify's hooks carries the id (404s, gate refusals and errors too). */
export function installRequestId (app: FastifyInstance): void {
  // A callback hook, not an async one: it runs on every request.
  app.addHook('onRequest', (request, reply, done) => {
    answerRequestId(request, reply)
    done()
  })
}
