// The request span of each REST and RPC request, when tracing is on (src/infra/tracing.ts):
// @fastify/otel starts it in the first onRequest hook, continuing the caller's W3C `traceparent`,
// and makes it the active context of the request's hooks and handler, so the pg, ioredis and storage
// spans of the request are its children. The URL is redacted (src/infra/redact.ts): spans are read
// by as many people as logs. A span per lifecycle hook is not made (several per request, for no
// question an operator asks); the handler's span is named after the operation.
//
// The attributes are OpenTelemetry's semantic conventions for an HTTP server span (`http.request.method`,
// `http.route`, `url.path` without the query, `url.query`, `url.scheme`, `server.address`/`port`,
// `client.address`, `user_agent.original`, `network.protocol.version`, `http.response.status_code`,
// `error.type`) and, for an RPC call, for an RPC server span (`rpc.system` — `grpc` for gRPC and
// gRPC-Web, `connect_rpc` for the Connect protocol —, `rpc.service`, `rpc.method`,
// `rpc.grpc.status_code` or `rpc.connect_rpc.error_code`), named `<METHOD> <route>` and
// `<package.Service>/<Method>`. A server span is an error only for the server's failures: a 5xx
// (never a 4xx: the client's mistake), or an RPC code gRPC counts as the server's.
//
// The span ends when the request does (request-end.ts), not when @fastify/otel would end it (at
// onSend: before a streamed answer is written, and never for one the client abandoned), so it
// lasts as long as the request and carries the status the client got: 499 for one that left, the
// edge's 408, an RPC call's code once its reply is written.
import { SpanStatusCode, type Span, type SpanStatus } from '@opentelemetry/api'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { redactUrl } from '../infra/redact.js'
import { tracingStarted } from '../infra/tracing.js'
import type { EndedRequest, RequestEnds } from './request-end.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The trace of the request's span, while tracing is on (the access line carries it). */
    traceId: string | undefined
    /** The request's span, ended by its request's end. */
    requestSpan: RequestSpan | undefined
  }
}

interface RequestSpan {
  span: Span
  /** An error @fastify/otel recorded (a thrown error): kept for a 5xx, dropped for a 4xx. */
  error: SpanStatus | undefined
  /** Gives the span its own methods back, sets `error` as its status when given, and ends it. */
  finish: (error: SpanStatus | undefined) => void
}

/** gRPC's codes a server span counts as the server's failure (the semantic conventions' list). */
const SERVER_FAILURES = new Set(['unknown', 'deadline_exceeded', 'unimplemented', 'internal', 'unavailable', 'data_loss'])

/** `/rpc/app.rooms.v1.RoomsService/GetRoom` or `/app.rooms.v1.RoomsService/GetRoom` → service, method. */
export function procedureOf (route: string): { service: string, method: string } | undefined {
  const match = /\/([A-Za-z_][\w.]*\.[A-Za-z_]\w*)\/([A-Za-z_]\w*)$/.exec(route)
  return match === null ? undefined : { service: match[1]!, method: match[2]! }
}

/** The access line's trace field, while tracing is on (src/http/access-log.ts); undefined when off. */
export function traceFields (): ((request: FastifyRequest) => Record<string, unknown>) | undefined {
  if (!tracingStarted()) return undefined
  return (request) => ({ traceId: request.traceId })
}

/** Registers the request spans on `app` (its root: before any other hook or route) and ends each
 *  with its request; nothing when tracing is off. */
export async function installRequestTracing (app: FastifyInstance, ends: RequestEnds): Promise<void> {
  if (!tracingStarted()) return
  // Loaded only with tracing on, as the SDK's own packages are (src/infra/tracing.ts).
  const { FastifyOtelInstrumentation } = await import('@fastify/otel')
  app.decorateRequest('traceId', undefined)
  app.decorateRequest('requestSpan', undefined)
  const instrumentation = new FastifyOtelInstrumentation({
    instrumentHooks: false,
    requestHook: (span, request) => {
      // Kept on the request: the access line is written after the span has ended.
      request.traceId = span.spanContext().traceId
      request.requestSpan = deferEnd(span)
      startAttributes(span, request)
    },
    // @fastify/otel names the handler's span after the function, or its plugin's source text.
    lifecycleHook: (span, { hookName, request }) => {
      const { operation } = request.routeOptions.config
      span.updateName(`${hookName} ${operation ?? `${request.method} ${request.routeOptions.url ?? 'unknown route'}`}`)
    }
  })
  await app.register(instrumentation.plugin())
  ends.observe(endSpan)
}

/** Holds back @fastify/otel's end and its error status until the request's end decides them. */
function deferEnd (span: Span): RequestSpan {
  const end = span.end.bind(span)
  const setStatus = span.setStatus.bind(span)
  const held: RequestSpan = {
    span,
    error: undefined,
    finish (error) {
      span.end = end
      span.setStatus = setStatus
      if (error !== undefined) setStatus(error)
      end()
    }
  }
  span.end = () => {}
  span.setStatus = (status) => {
    if (status.code === SpanStatusCode.ERROR) held.error = status
    else setStatus(status)
    return span
  }
  return held
}

function startAttributes (span: Span, request: FastifyRequest): void {
  const route = request.routeOptions.url
  const [path = '', query] = redactUrl(request.originalUrl).split(/\?(.*)/s)
  const host = request.host
  const port = /:(\d+)$/.exec(host)?.[1]
  span.setAttributes({
    'http.request.method': request.method,
    'url.path': path,
    'url.scheme': request.protocol,
    'server.address': request.hostname,
    'network.protocol.version': request.raw.httpVersionMajor === 2 ? '2' : '1.1',
    ...(port === undefined ? {} : { 'server.port': Number(port) }),
    ...(query === undefined || query === '' ? {} : { 'url.query': query }),
    ...(route === undefined ? {} : { 'http.route': route }),
    ...(request.headers['user-agent'] === undefined ? {} : { 'user_agent.original': request.headers['user-agent'] })
  })
  const { operation, admission } = request.routeOptions.config
  if (operation !== undefined) span.setAttribute('app.operation', operation)
  if (admission !== undefined) span.setAttribute('app.transport', admission.transport)
  const procedure = admission?.transport === 'rpc' && route !== undefined ? procedureOf(route) : undefined
  if (procedure !== undefined) {
    const grpc = /^application\/grpc/i.test(request.headers['content-type'] ?? '')
    span.updateName(`${procedure.service}/${procedure.method}`)
    span.setAttributes({ 'rpc.system': grpc ? 'grpc' : 'connect_rpc', 'rpc.service': procedure.service, 'rpc.method': procedure.method })
  } else {
    span.updateName(`${request.method} ${route ?? 'unknown route'}`)
  }
}

function endSpan ({ request, status, rpc }: EndedRequest): void {
  const held = request?.requestSpan
  if (request === undefined || held === undefined) return
  request.requestSpan = undefined
  const { span } = held
  span.setAttributes({ 'http.response.status_code': status, 'client.address': request.clientIp })
  let failure: string | undefined = status >= 500 ? String(status) : undefined
  if (rpc !== undefined) {
    if (/^application\/grpc/i.test(request.headers['content-type'] ?? '')) span.setAttribute('rpc.grpc.status_code', rpc.grpcStatus)
    else if (rpc.code !== 'ok') span.setAttribute('rpc.connect_rpc.error_code', rpc.code)
    failure = SERVER_FAILURES.has(rpc.code) ? rpc.code : undefined
  }
  if (failure !== undefined) span.setAttribute('error.type', failure)
  held.finish(failure === undefined ? undefined : held.error ?? { code: SpanStatusCode.ERROR })
}
