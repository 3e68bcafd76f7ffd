// One access line per request, at `info`, written when the request ends, whatever ended it
// (request-end.ts: answered, abandoned by its client — 499 —, or refused by the edge itself).
// Fastify's own two lines, "incoming request" and "request completed", are off
// (disableRequestLogging in src/app.ts). The line carries the request id as `reqId` (request.log's
// binding, request-id.ts), the caller when the gate knew one, the client address by the one rule
// (client-ip.ts), the catalogue operation, an RPC call's code, and the URL without the tokens it may
// carry (src/infra/redact.ts). A refusal the HTTP/1.1 parser made before any request existed has
// its line too: status, request id and peer address, nothing else being known.
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import { redactUrl } from '../infra/redact.js'
import type { EndedRequest, RequestEnds } from './request-end.js'

/** More fields for the line, computed per request (the trace id, when tracing is on). */
export type AccessLineFields = (request: FastifyRequest) => Record<string, unknown> | undefined

export interface AccessLogOptions {
  /** Merged into every access line; undefined adds nothing. */
  extraFields?: AccessLineFields | undefined
}

/** The access line's fields for an ended request. */
export function accessLine ({ request, reply, status, ms, rpc, remoteAddress }: EndedRequest, extraFields?: AccessLineFields): Record<string, unknown> {
  if (request === undefined || reply === undefined) return { status, client: remoteAddress }
  const config = request.routeOptions.config
  const length = reply.getHeader('content-length')
  const sent = request.headers['content-length']
  return {
    method: request.method,
    // The route's pattern (`/api/rooms/:roomId`), so lines group by route; none for an unknown path.
    route: request.routeOptions.url,
    // What the client sent (a gRPC call at a standard path is routed under /rpc: src/rpc/standard-paths.ts).
    url: redactUrl(request.originalUrl),
    status,
    // An RPC call's outcome: its gRPC / Connect code (a gRPC error travels with status 200).
    code: rpc?.code,
    ms: Math.round(ms * 100) / 100,
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

export function installAccessLog (log: FastifyBaseLogger, ends: RequestEnds, options: AccessLogOptions = {}): void {
  const { extraFields } = options
  // Logs above `info` (LOG_LEVEL=warn): no observer at all, so a request pays nothing for it.
  if (!LOGS_INFO.has(log.level)) return
  ends.observe((ended) => {
    const line = accessLine(ended, extraFields)
    if (ended.request === undefined) log.info({ reqId: ended.requestId, ...line }, 'request')
    else ended.request.log.info(line, 'request')
  })
}
