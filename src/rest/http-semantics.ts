// HTTP semantics every REST route shares (RFC 9110, DECISIONS §17), so no route implements them:
// a GET whose If-None-Match matches the ETag its answer carries is 304 with no body; a 201 carries
// `Location`, the new resource's URL (the route's item URL, found among the registered routes:
// `POST /api/rooms` → `/api/rooms/<id>`); a body in a media type no route reads is 415 (JSON routes
// read `application/json` only: Fastify's default `text/plain` parser is removed, so a text body is
// refused as such instead of failing validation as "must be object"). A stale If-Match is 412 by the
// error table (src/rest/errors.ts: `stale_version`).
import type { FastifyInstance, FastifyRequest } from 'fastify'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's answers carry an `ETag` (a GET then answers If-None-Match with 304). */
    etag?: true
    /** Where the resource a 201 of this route creates lives, when it is not the route's own item URL
     *  (`POST /api/attachments` creates `/api/uploads/<id>`): that collection's path. */
    location?: string
  }
}

/** Whether an If-None-Match header names this ETag (weak comparison, as RFC 9110 asks for it). */
export function matchesEtag (header: string | undefined, etag: string): boolean {
  if (header === undefined) return false
  if (header.trim() === '*') return true
  const bare = etag.replace(/^W\//, '')
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === bare)
}

/**
 * The URL template of the resource a POST to `url` creates: `location` where the route names the
 * collection, else the route's own item URL (`<url>/:param`) when one is registered; undefined when
 * the created thing has no URL of its own (it is read through a list).
 */
export function locationTemplateOf (url: string, urls: ReadonlySet<string>, location: string | undefined): string | undefined {
  const collection = location ?? url.replace(/\/$/, '')
  if (location !== undefined) return `${collection}/{id}`
  for (const candidate of urls) {
    const match = candidate.startsWith(`${collection}/:`) && !candidate.slice(collection.length + 2).includes('/')
    if (match) return `${collection}/{id}`
  }
  return undefined
}

function filled (template: string, params: unknown): string {
  const values = (params ?? {}) as Record<string, string>
  return template.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(values[name] ?? ''))
}

function createdId (payload: unknown): string | undefined {
  const id = (payload as { data?: { id?: unknown } } | null)?.data?.id
  return typeof id === 'string' ? id : undefined
}

export function installHttpSemantics (app: FastifyInstance): void {
  app.removeContentTypeParser('text/plain')

  const urls = new Set<string>()
  const templates = new Map<string, string | undefined>()
  app.addHook('onRoute', (route) => { urls.add(route.url) })
  const templateOf = (request: FastifyRequest): string | undefined => {
    const url = request.routeOptions.url ?? ''
    if (!templates.has(url)) templates.set(url, locationTemplateOf(url, urls, request.routeOptions.config.location))
    return templates.get(url)
  }

  app.addHook('preSerialization', async (request, reply, payload) => {
    if (reply.statusCode !== 201 || reply.hasHeader('location')) return payload
    const id = createdId(payload)
    const template = templateOf(request)
    if (id !== undefined && template !== undefined) void reply.header('location', filled(template, request.params).replace('{id}', encodeURIComponent(id)))
    return payload
  })

  app.addHook('onSend', async (request, reply, payload) => {
    if ((request.method !== 'GET' && request.method !== 'HEAD') || reply.statusCode !== 200) return payload
    const etag = reply.getHeader('etag')
    if (typeof etag !== 'string' || !matchesEtag(request.headers['if-none-match'], etag)) return payload
    void reply.code(304).removeHeader('content-length')
    return null
  })
}
