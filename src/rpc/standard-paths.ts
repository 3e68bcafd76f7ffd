// gRPC at the paths every gRPC tool uses (DECISIONS §17). SPEC serves the gateway under /rpc; stock
// generated stubs (grpc-go, grpc-swift, grpcio, @grpc/grpc-js), grpcurl, grpc_health_probe and
// Kubernetes' gRPC probes call `/<package>.<Service>/<Method>` at the root. Such a call is rewritten
// to `/rpc/<package>.<Service>/<Method>` before routing (Fastify's `rewriteUrl`), so it takes the very
// route of its /rpc twin: the same gate, tiers, answers, trailers-only refusals, metrics and access
// classes, and an unknown method there is the gateway's UNIMPLEMENTED. Only RPC calls are rewritten —
// a POST in a content type of gRPC, gRPC-Web or Connect, and CORS preflights — so any other request
// to such a path (a browser's GET) keeps the REST 404. The path the client sent stays in
// `request.originalUrl` (the access line shows it).
import type { IncomingMessage } from 'node:http'
import type { Http2ServerRequest } from 'node:http2'

/** `/<package>.<Service>/<Method>`, a package of one or more dotted names, and a query at most. */
const STANDARD_PATH = /^\/[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\/[A-Za-z_]\w*(?:\?|$)/

/** gRPC (`application/grpc`, `+proto`, `+json`), gRPC-Web (and `-text`), Connect streaming and unary. */
const RPC_CONTENT_TYPE = /^application\/(?:grpc(?:-web(?:-text)?)?|connect\+(?:proto|json)|proto|json)\s*(?:[+;]|$)/i

/** Whether a request is an RPC call at a standard path (then served by the gateway under `prefix`). */
export function isStandardPathCall (method: string | undefined, url: string, contentType: string | undefined): boolean {
  if (method !== 'POST' && method !== 'OPTIONS') return false
  if (!STANDARD_PATH.test(url)) return false
  return method === 'OPTIONS' || RPC_CONTENT_TYPE.test(contentType ?? '')
}

/** Fastify's `rewriteUrl`: an RPC call at a standard path goes to the gateway under `prefix`. */
export function standardPathRewrite (prefix: string): (request: IncomingMessage | Http2ServerRequest) => string {
  return (request) => {
    const url = request.url ?? '/'
    return isStandardPathCall(request.method, url, request.headers['content-type']) ? `${prefix}${url}` : url
  }
}
