// One access line per request, at `info`, written when the response is done (Fastify's own two lines,
// "incoming request" and "request completed", are off: disableRequestLogging in src/app.ts). The line
// carries the request id as `reqId` (request.log's binding, request-id.ts), the caller when the gate
// knew one, the client address by the one rule (client-ip.ts), the catalogue operation, and the URL
// without the tokens it may carry (src/infra/redact.ts).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { redactUrl } from '../infra/redact.js'

/** More fields for the line, computed per request (the trace id, when tracing is on). */
export type AccessLineFields = (request: FastifyRequest) => Record<string, unknown> | undefined

export interface AccessLogOptions {
  /** Merged into every access line; undefined adds nothing. */
  extraFields?: AccessLineFields | undefined
}

/** The access line's fields for a finished request. */
export function accessLine (request: FastifyRequest, reply: FastifyReply, extraFields?: AccessLineFields): Record<string, unknown> {
  const config = request.routeOptions.config
  const length = reply.getHeader('content-length')
  const sent = request.headers['content-length']
  return {
    method: request.method,
    // The route's pattern (`/api/rooms/:roomId`), so lines group by route; none for an unknown path.
    route: request.routeOptions.url,
    // What the client sent (a gRPC call at a standard path is routed under /rpc: src/rpc/standard-paths.ts).
    url: redactUrl(request.originalUrl),
    status: reply.statusCode,
    ms: Math.round(reply.elapsedTime * 100) / 100,
    userId: request.actor?.userId,
    client: request.clientIp,
    operation: config.operation,
    bytesIn: sent === undefined ? undefined : Number(sent),
    // Streamed answers (the event stream, file downloads) have no length up front and leave it out.
    bytes: length === undefined ? undefined : Number(length),
    ...extraFields?.(request)
  }
}

/** The levels at which `info` lines are written. */
const LOGS_INFO = new Set(['trace', 'debug', 'info'])

export function installAccessLog (app: FastifyInstance, options: AccessLogOptions = {}): void {
  const { extraFields } = options
  // Logs above `info` (LOG_LEVEL=warn): no hook at all, so a request pays nothing for it.
  if (!LOGS_INFO.has(app.log.level)) return
  // A callback hook, not an async one: it runs on every request.
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info(accessLine(request, reply, extraFields), 'request')
    done()
  })
}
