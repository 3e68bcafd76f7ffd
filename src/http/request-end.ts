// Every request ends exactly once, whatever ended it (DECISIONS §17 "Operators see every request"),
// and here is where that end is decided and handed to what observes requests — the access line
// (access-log.ts), the request metrics (metrics.ts), the request span (request-tracing.ts):
//
// - answered: the server ended its response; the status it sent.
// - abandoned: the response closed before the server ended it — the client closed an event stream,
//   reset an upload, gave up waiting (HTTP/2 resets the stream; HTTP/1.1 closes the connection).
//   Status 499, as nginx logs "client closed request"; an RPC call's code is then `canceled`.
// - refused by the edge: a 408 the listener wrote itself on the socket or the stream (a body that
//   stopped arriving, a request too slow as a whole: body-idle.ts, http2-sessions.ts, Node's request
//   timeout in client-errors.ts), which Fastify never sees: the status the edge wrote.
// - refused before any request existed: the HTTP/1.1 parser gave up on the bytes (400, 431, a 408 for
//   headers too slow): one line and one count too, with no method, route or operation.
//
// Fastify's own onResponse is not enough: it runs on the response's `finish`, which an abandoned
// HTTP/1.1 response never emits, and which Node's HTTP/2 compatibility layer emits for every closed
// stream, answered or reset alike. So the end is read here from the response itself, at `finish`
// or `close`, whichever comes first.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2'
import type { Socket } from 'node:net'

/** nginx's status for a request whose client closed the connection before the answer was complete. */
export const CLIENT_CLOSED = 499

/** How an RPC call ended, in the gRPC / Connect code model (set by the gateway: src/rpc/outcome.ts). */
export interface RpcOutcome {
  /** The code's name as Connect writes it: `ok`, `unauthenticated`, `unavailable`… */
  code: string
  /** Its number, as gRPC carries it in `grpc-status` (0 for ok). */
  grpcStatus: number
  /** The HTTP status a Connect reply of this code has (200 for ok): its class is the call's class
   *  whatever status carried it (a gRPC error travels in a 200). */
  httpStatus: number
}

declare module 'fastify' {
  interface FastifyRequest {
    /** RPC calls: the code the call ended with, once the gateway knows it. */
    rpcOutcome: RpcOutcome | undefined
  }
}

/** One ended request, as its observers read it. */
export interface EndedRequest {
  /** Undefined for a refusal the HTTP/1.1 parser made before a request existed. */
  request: FastifyRequest | undefined
  reply: FastifyReply | undefined
  /** The status the client got: the answer's, the edge's refusal, or 499 when the client left. */
  status: number
  /** From the request's arrival to its end (0 for a refusal before any request). */
  ms: number
  requestId: string
  /** The route's transport (`rest`, `rpc`), `rpc` for a refusal under the gateway, else `none`. */
  transport: string
  /** RPC calls only: the code of the outcome (`canceled` for a call its client abandoned). */
  rpc: RpcOutcome | undefined
  /** The peer's address, for a refusal before any request (a request has its client address). */
  remoteAddress: string | undefined
}

export type RequestEndObserver = (ended: EndedRequest) => void

/** Statuses the edge wrote itself for a request Fastify was handling, by its raw request. */
const refusedByEdge = new WeakMap<object, number>()
/** The HTTP/1.1 request in flight on each connection, for a refusal Node reports by socket only. */
const inFlight = new WeakMap<Socket, IncomingMessage>()

/** The edge answered `raw` itself (a 408 on its socket or stream): its end carries this status. */
export function noteEdgeRefusal (raw: IncomingMessage | Http2ServerRequest, status: number): void {
  refusedByEdge.set(raw, status)
}

/** The HTTP/1.1 request Fastify is handling on `socket`, if any. */
export function requestInFlight (socket: Socket): IncomingMessage | undefined {
  return inFlight.get(socket)
}

/** The code of a call abandoned by its client, and its Connect status (499). */
const CANCELED: RpcOutcome = { code: 'canceled', grpcStatus: 1, httpStatus: CLIENT_CLOSED }

/** A call the gateway reported no code for (the edge refused it before the gateway saw it): gRPC's
 *  `unknown`, classed by the status that was sent. */
function unknownOutcome (status: number): RpcOutcome {
  return { code: 'unknown', grpcStatus: 2, httpStatus: status }
}

export interface RequestEnds {
  /** Adds an observer of every ended request, from now on. */
  observe (observer: RequestEndObserver): void
  /** Reads the ends of `app`'s requests (call once, at its root). */
  install (app: FastifyInstance): void
  /** Watches a request no hook sees (one Fastify refuses before routing: framework-errors.ts). */
  watch (request: FastifyRequest, reply: FastifyReply): void
  /** A refusal written on a connection no request was in flight on (the HTTP/1.1 parser's). */
  refusedBeforeRequest (status: number, requestId: string, socket: Socket): void
}

export function createRequestEnds (): RequestEnds {
  const observers: RequestEndObserver[] = []
  const ended = new WeakSet<FastifyRequest>()

  function report (end: EndedRequest): void {
    for (const observer of observers) observer(end)
  }

  function end (request: FastifyRequest, reply: FastifyReply): void {
    if (ended.has(request)) return
    ended.add(request)
    const raw = request.raw
    if (inFlight.get(raw.socket) === raw) inFlight.delete(raw.socket)
    const edgeStatus = refusedByEdge.get(raw)
    const abandoned = edgeStatus === undefined && !answered(raw, reply.raw)
    const status = edgeStatus ?? (abandoned ? CLIENT_CLOSED : reply.statusCode)
    // A path under the gateway that names no method has no route, but the gateway answered it.
    const transport = request.routeOptions.config.admission?.transport ?? (request.rpcOutcome === undefined ? 'none' : 'rpc')
    report({
      request,
      reply,
      status,
      ms: reply.elapsedTime,
      requestId: request.id,
      transport,
      rpc: transport === 'rpc' ? (abandoned ? CANCELED : request.rpcOutcome ?? unknownOutcome(status)) : undefined,
      remoteAddress: undefined
    })
  }

  function watch (request: FastifyRequest, reply: FastifyReply): void {
    reply.raw.once('close', () => { end(request, reply) })
  }

  return {
    observe (observer) { observers.push(observer) },
    install (app) {
      app.decorateRequest('rpcOutcome', undefined)
      // Callback hooks, not async ones: they run on every request.
      app.addHook('onRequest', (request, reply, done) => {
        const raw = request.raw
        if (raw.httpVersionMajor === 1) inFlight.set(raw.socket, raw)
        watch(request, reply)
        done()
      })
      app.addHook('onResponse', (request, reply, done) => {
        end(request, reply)
        done()
      })
    },
    watch,
    refusedBeforeRequest (status, requestId, socket) {
      report({ request: undefined, reply: undefined, status, ms: 0, requestId, transport: 'none', rpc: undefined, remoteAddress: socket.remoteAddress })
    }
  }
}

/** Whether the server ended the response (all of it written, or at least handed to the socket). */
function answered (raw: IncomingMessage | Http2ServerRequest, response: ServerResponse | Http2ServerResponse): boolean {
  if (response.writableEnded) return true
  // An answer written on the HTTP/2 stream itself (a gRPC trailers-only refusal: src/rpc/grpc-refusal.ts).
  // A reset stream's writable side ends too, but then the request is `aborted`.
  return 'stream' in raw && raw.stream.writableEnded && !raw.aborted
}
