// The refusals the edge makes by itself, before any transport's code runs: a request the HTTP parser
// or the listener gives up on (not HTTP, headers too large, too slow to arrive), a path Fastify
// cannot route (bad percent-encoding, a segment too long) or that no route serves (404, 405). Each
// is answered in the envelope of the transport the request belongs to, so each transport hands the
// edge its writer (src/app.ts wires them: rest/errors.ts, rpc/errors.ts); http/ imports neither.

export type EdgeRefusal = 'bad_request' | 'route_not_found' | 'method_not_allowed' | 'request_timeout' | 'headers_too_large'

/** A whole refusal in one transport's envelope. */
export interface RefusalReply {
  status: number
  contentType: string
  body: string
}

/** How one transport words a refusal of the edge. */
export type RefusalWriter = (reason: EdgeRefusal, message: string) => RefusalReply

/** The writers the edge answers with: REST's for every path, RPC's for the paths under its prefix. */
export interface EdgeRefusals {
  rest: RefusalWriter
  rpc?: { prefix: string, write: RefusalWriter }
}

/** The writer for a request URL. */
export function refusalWriterFor (refusals: EdgeRefusals, url: string): RefusalWriter {
  return refusals.rpc !== undefined && url.startsWith(`${refusals.rpc.prefix}/`) ? refusals.rpc.write : refusals.rest
}
