// The REST API described (issue 33, DECISIONS §15): GET /openapi.json validates as OpenAPI 3.1 (by a
// validator package), holds every REST route the app registers — read from its own route table —
// each with a summary, tags, a success response and the catalogue's tier and access; /docs serves
// Swagger UI with no script or style from another host; neither exists on EXPOSE=public.
import t from 'tap'
import type { RouteOptions } from 'fastify'
import { Validator } from '@seriousme/openapi-schema-validator'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { startApp, testEnv } from './helpers/app.js'
import { REST_ROUTES } from './helpers/rest-routes.js'

interface Operation { summary?: string, tags?: string[], responses?: Record<string, { content?: unknown, headers?: Record<string, unknown> }>, 'x-rate-limit-tier'?: string, 'x-access'?: string, security?: unknown[], parameters?: Array<{ name: string, in: string }> }
interface Document { openapi: string, paths: Record<string, Record<string, Operation>>, components: { securitySchemes: Record<string, unknown> } }

const registered: Array<{ method: string, url: string }> = []
const onRoute = (route: RouteOptions): void => {
  for (const method of [route.method].flat()) registered.push({ method, url: route.url })
}
const app = await buildApp(loadConfig(testEnv()), { onRoute })
t.teardown(async () => { await app.close() })

const res = await app.inject({ method: 'GET', url: '/openapi.json' })
const doc = res.json<Document>()
const restRoutes = registered.filter((r) => r.url.startsWith('/api/') && r.method !== 'HEAD' && r.method !== 'OPTIONS')
const pathOf = (url: string): string => url.replace(/:(\w+)/g, '{$1}')

t.test('GET /openapi.json is a valid OpenAPI 3.1 document', async (t) => {
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /application\/json/)
  t.match(doc.openapi, /^3\.1\./)
  const result = await new Validator().validate(structuredClone(doc) as unknown as Record<string, unknown>)
  t.ok(result.valid, `valid OpenAPI 3.1${result.valid ? '' : `: ${JSON.stringify(result.errors).slice(0, 2000)}`}`)
  t.ok(doc.components.securitySchemes.sessionCookie, 'the session cookie scheme')
  t.ok(doc.components.securitySchemes.adminBearer, 'the admin Bearer scheme')
  t.notOk(Object.keys(doc.paths).some((p) => p.startsWith('/rpc')), 'RPC is described by proto/, not here')
})

t.test('every registered REST route is in it, with a summary, tags and a success response', async (t) => {
  t.ok(restRoutes.length >= REST_ROUTES.length, `${restRoutes.length} REST routes`)
  for (const route of restRoutes) {
    const label = `${route.method} ${route.url}`
    const op = doc.paths[pathOf(route.url)]?.[route.method.toLowerCase()]
    if (op === undefined) {
      t.fail(`${label}: not in /openapi.json`)
      continue
    }
    t.ok(typeof op.summary === 'string' && op.summary.length > 0, `${label}: summary`)
    t.ok((op.tags ?? []).length > 0, `${label}: tags`)
    const success = Object.keys(op.responses ?? {}).filter((status) => /^[23]\d\d$/.test(status))
    t.ok(success.length > 0, `${label}: a success response schema (has ${Object.keys(op.responses ?? {}).join(', ')})`)
    t.ok(typeof op['x-rate-limit-tier'] === 'string', `${label}: its tier, from the catalogue`)
    t.ok(op.responses?.['400'] !== undefined, `${label}: the error envelope`)
    if (op['x-rate-limit-tier'] !== 'exempt') {
      t.ok(op.responses?.['429']?.headers?.['RateLimit-Remaining'] !== undefined, `${label}: 429 with the rate-limit headers`)
    }
    if (op['x-access'] === 'required') t.same(op.security, [{ sessionCookie: [] }], `${label}: needs the session`)
  }
})

t.test('the creates document their Idempotency-Key header and 422', async (t) => {
  for (const [path, method] of [['/api/rooms', 'post'], ['/api/sparks', 'post'], ['/api/offices', 'post'], ['/api/offices/{officeId}/invites', 'post'], ['/api/shelves', 'post'], ['/api/shelves/{shelfId}/links', 'post'], ['/api/uploads', 'post'], ['/api/attachments', 'post']] as const) {
    const op = doc.paths[path]?.[method]
    t.ok(op?.parameters?.some((p) => p.in === 'header' && p.name === 'Idempotency-Key'), `${method} ${path}: Idempotency-Key`)
    t.ok(op?.responses?.['422'] !== undefined, `${method} ${path}: 422`)
  }
})

t.test('/docs renders the document with no asset from another host', async (t) => {
  const page = await app.inject({ method: 'GET', url: '/docs/' })
  const html = page.statusCode === 302 ? (await app.inject({ method: 'GET', url: page.headers.location as string })).body : page.body
  t.match(html, /swagger-ui/i)
  t.notMatch(html, /(src|href)\s*=\s*["']?(https?:)?\/\//i, 'no script, style or image from another host')
  const init = await app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' })
  t.equal(init.statusCode, 200)
  // (a comment in it cites a URL; no string in it is one)
  t.notMatch(init.body, /["'`]\s*(https?:)?\/\//, 'the initializer fetches nothing from another host')
})

t.test('neither the document nor the docs on EXPOSE=public', async (t) => {
  const pub = await startApp({ EXPOSE: 'public' })
  t.teardown(pub.close)
  t.equal((await pub.app.inject({ method: 'GET', url: '/openapi.json' })).statusCode, 404)
  t.equal((await pub.app.inject({ method: 'GET', url: '/docs' })).statusCode, 404)
})
