// The request span of each REST and RPC request, when tracing is on (src/infra/tracing.ts):
// @fastify/otel starts it in the first onRequest hook, continuing the caller's W3C `traceparent`,
// and makes it the active context of the request's hooks and handler, so the pg, ioredis and storage
// spans of the request are its children. Named `<METHOD> <route pattern>` with the operation of the
// catalogue, and the URL redacted (src/infra/redact.ts): spans are read by as many people as logs.
// A span per lifecycle hook is not made (several per request, for no question an operator asks).
import { FastifyOtelInstrumentation } from '@fastify/otel'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { redactUrl } from '../infra/redact.js'
import { tracingStarted } from '../infra/tracing.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The trace of the request's span, while tracing is on (the access line carries it). */
    traceId: string | undefined
  }
}

/** The access line's trace field, while tracing is on (src/http/access-log.ts); undefined when off. */
export function traceFields (): ((request: FastifyRequest) => Record<string, unknown>) | undefined {
  if (!tracingStarted()) return undefined
  return (request) => ({ traceId: request.traceId })
}

/** Registers the request spans on `app` (its root: before any other hook or route); nothing when tracing is off. */
export async function installRequestTracing (app: FastifyInstance): Promise<void> {
  if (!tracingStarted()) return
  app.decorateRequest('traceId', undefined)
  const instrumentation = new FastifyOtelInstrumentation({
    instrumentHooks: false,
    requestHook: (span, request) => {
      // Kept on the request: the access line is written after the span has ended.
      request.traceId = span.spanContext().traceId
      const route = request.routeOptions.url ?? 'unknown route'
      span.updateName(`${request.method} ${route}`)
      span.setAttribute('url.path', redactUrl(request.url))
      const { operation, admission } = request.routeOptions.config
      if (operation !== undefined) span.setAttribute('app.operation', operation)
      if (admission !== undefined) span.setAttribute('app.transport', admission.transport)
    }
  })
  await app.register(instrumentation.plugin())
}
