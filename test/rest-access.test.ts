// Access classes on REST (issue 26 item 1, DECISIONS §16): every REST route the app registers — read
// from its own route table as the routes are registered, not from a hand list — is called without a
// session. Public routes answer without one; every other route is 401 `Unauthorized`, with the
// rate-limit headers unless its tier is exempt. SPEC's Optional class is the RPC gateway's only: the
// room and office lists are 401 on REST (`?scope=public` included) and answer anonymous RPC calls.
import t from 'tap'
import type { RouteOptions } from 'fastify'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { accessOn, isOperationId, OPERATIONS } from '../src/core/operations.js'
import { OfficesService } from '../src/gen/app/offices/v1/offices_pb.js'
import { RoomsService } from '../src/gen/app/rooms/v1/rooms_pb.js'
import { testEnv, uniqueClientIp } from './helpers/app.js'
import { REST_ROUTES } from './helpers/rest-routes.js'
import { rpcClient } from './helpers/sign-in.js'

interface Registered { method: string, url: string, operation: string | undefined }

const registered: Registered[] = []
const onRoute = (route: RouteOptions): void => {
  for (const method of [route.method].flat()) registered.push({ method, url: route.url, operation: route.config?.operation })
}
const config = loadConfig(testEnv())
const app = await buildApp(config, { onRoute })
const url = await app.listen({ port: 0, host: '127.0.0.1' })
t.teardown(async () => { await app.close() })

/** Every REST route but the HEAD twins Fastify adds to GET routes and CORS preflights. */
const restRoutes = registered.filter((route) => route.url.startsWith('/api/') && route.method !== 'HEAD' && route.method !== 'OPTIONS')

/** The routes SPEC and DECISIONS §9–§16 name public on REST: sign-in, invite info and file reads. */
const PUBLIC_ON_REST = new Set([
  'POST /api/auth/request-login',
  'GET /api/auth/authorize',
  'POST /api/auth/confirm-deletion',
  'GET /api/invites/:token',
  'GET /api/uploads/:fileId',
  // DECISIONS §11: the messages of the day are public.
  'GET /api/motd'
])

t.test('the route table has the REST API in it', async (t) => {
  t.ok(restRoutes.length >= 40, `${restRoutes.length} REST routes registered`)
  const table = new Set(restRoutes.map((route) => `${route.method} ${route.url}`))
  for (const route of REST_ROUTES) t.ok(table.has(`${route.method} ${route.url}`), `test/helpers/rest-routes.ts: ${route.method} ${route.url} is a registered route`)
})

t.test('every REST route without a session: public ones answer, every other is 401 with the rate-limit headers', async (t) => {
  for (const route of restRoutes) {
    const label = `${route.method} ${route.url}`
    if (!isOperationId(route.operation)) {
      t.fail(`${label}: no operation`)
      continue
    }
    const policy = OPERATIONS[route.operation]
    const access = accessOn(policy, 'rest')
    // Administration (DECISIONS §12) is by the OIDC provider's token: without a provider configured,
    // as here, it answers 503 whatever the request carries (test/admin.auth.test.ts has the rest).
    const adminRoute = route.url.startsWith('/api/admin/')
    t.equal(adminRoute, access === 'admin' || access === 'super_admin', `${label}: admin routes and only they take an admin token`)
    t.equal(access === 'required' || adminRoute, !PUBLIC_ON_REST.has(label), `${label}: ${access} on REST (${route.operation})`)
    const path = route.url.replace(/:(\w+)/g, (_, name: string) => `${name}-unknown`)
    const res = await app.inject({
      method: route.method as 'GET',
      url: path,
      headers: { 'x-forwarded-for': uniqueClientIp(), 'content-type': 'application/json' },
      ...(route.method === 'GET' || route.method === 'DELETE' ? {} : { payload: '{}' })
    })
    if (adminRoute) {
      t.equal(res.statusCode, 503, `${label}: 503 without an identity provider`)
      t.equal(res.json().error, 'ServiceUnavailable', `${label}: the REST envelope`)
    } else if (access === 'required') {
      t.equal(res.statusCode, 401, `${label}: 401`)
      t.equal(res.json().error, 'Unauthorized', `${label}: the REST envelope`)
    } else {
      t.not(res.statusCode, 401, `${label}: answered without a session (${res.statusCode})`)
    }
    if (policy.tier === 'exempt') {
      t.notOk('ratelimit-limit' in res.headers, `${label}: exempt, no rate-limit headers`)
    } else {
      t.ok(Number(res.headers['ratelimit-limit']) > 0, `${label}: RateLimit-Limit`)
      t.ok(res.headers['x-ratelimit-remaining'] !== undefined, `${label}: X-RateLimit-Remaining`)
    }
  }
})

t.test('the lists: 401 on REST whatever the query, public rooms and offices over anonymous RPC', async (t) => {
  for (const path of ['/api/rooms', '/api/rooms?scope=public', '/api/offices', '/api/offices?scope=public&limit=5']) {
    const res = await app.inject({ method: 'GET', url: path, headers: { 'x-forwarded-for': uniqueClientIp() } })
    t.equal(res.statusCode, 401, path)
    t.same(res.json(), { error: 'Unauthorized', message: 'Sign in to continue.' }, `${path}: body`)
    t.equal(res.headers['ratelimit-limit'], '300', `${path}: the read tier's headers`)
  }
  const target = { app, config, url, close: async () => {} }
  t.ok(Array.isArray((await rpcClient(target, RoomsService).listRooms({})).rooms), 'RPC ListRooms answers without a token')
  t.ok(Array.isArray((await rpcClient(target, OfficesService).listOffices({})).offices), 'RPC ListOffices answers without a token')
})
