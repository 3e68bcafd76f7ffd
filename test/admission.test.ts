// The admission gate (issue 18 item 1): every request is admitted — caller resolved, counted under its
// operation's tier, access checked — before its body is read, on both transports, with the rate-limit
// headers on every reply; refusals arrive in the caller's own protocol (Connect, gRPC over HTTP/2,
// gRPC-Web); and every route and method has its entry in the one catalogue.
import t from 'tap'
import Fastify, { type RouteOptions } from 'fastify'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { Code, createClient } from '@connectrpc/connect'
import { createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node'
import { installAdmission } from '../src/http/admission.js'
import type { Core } from '../src/core/index.js'
import { OPERATIONS } from '../src/core/operations.js'
import { AuthService } from '../src/gen/app/auth/v1/auth_pb.js'
import { GRPC_SERVICES, RPC_SERVICES } from '../src/rpc/index.js'
import { operationOfPath } from '../src/rpc/gate.js'
import { startApp, testEnv, uniqueClientIp } from './helpers/app.js'
import { rpcError } from './helpers/people.js'

const s = await startApp()
t.teardown(s.close)

t.test('malformed RPC bodies are counted in their tier, with the rate-limit headers on every reply', async (t) => {
  for (const [label, type, payload] of [['truncated JSON', 'application/json', '{"email":'], ['a wrong JSON type', 'application/json', '{"email":5}'], ['random bytes', 'application/proto', Buffer.from([0xff, 0xff, 0xff])]] as const) {
    const ip = uniqueClientIp()
    const statuses: number[] = []
    for (let i = 1; i <= 15; i++) {
      const res = await s.app.inject({ method: 'POST', url: '/rpc/app.auth.v1.AuthService/RequestLogin', headers: { 'content-type': type, 'x-forwarded-for': ip }, payload })
      statuses.push(res.statusCode)
      t.equal(res.headers['ratelimit-limit'], '10', `${label} #${i}: RateLimit-Limit`)
      t.equal(res.headers['x-ratelimit-remaining'], String(Math.max(0, 10 - i)), `${label} #${i}: remaining`)
      if (i > 10) {
        t.equal(res.json().code, 'resource_exhausted', `${label} #${i}`)
        t.ok(Number(res.headers['retry-after']) > 0, `${label} #${i}: Retry-After`)
      } else {
        t.equal(res.json().code, 'invalid_argument', `${label} #${i}`)
      }
    }
    t.same(statuses, [...Array(10).fill(400), ...Array(5).fill(429)], `${label}: ten refused as invalid, then limited`)
  }
})

t.test('REST counts malformed bodies the same way', async (t) => {
  const ip = uniqueClientIp()
  const statuses: number[] = []
  for (let i = 0; i < 12; i++) {
    const res = await s.app.inject({ method: 'POST', url: '/api/auth/request-login', headers: { 'content-type': 'application/json', 'x-forwarded-for': ip }, payload: '{"email":' })
    statuses.push(res.statusCode)
    t.ok(res.headers['ratelimit-remaining'] !== undefined)
  }
  t.same(statuses, [...Array(10).fill(400), 429, 429])
})

t.test('refusals before the body in the caller\'s protocol: gRPC over HTTP/2 and gRPC-Web', async (t) => {
  for (const [label, transport] of [
    ['gRPC', createGrpcTransport({ baseUrl: `${s.url}/rpc` })],
    ['gRPC-Web', createGrpcWebTransport({ baseUrl: `${s.url}/rpc`, httpVersion: '1.1' })]
  ] as const) {
    const anonymous = createClient(AuthService, transport)
    const error = await rpcError(anonymous.getMe({}))
    t.equal(error.code, Code.Unauthenticated, `${label}: no token`)
    t.equal(error.rawMessage, 'A Bearer token is required.')
    t.equal(error.metadata.get('ratelimit-limit'), '300', `${label}: rate-limit headers on the refusal`)

    const ip = uniqueClientIp()
    const limited = createClient(AuthService, label === 'gRPC'
      ? createGrpcTransport({ baseUrl: `${s.url}/rpc`, interceptors: [(next) => async (req) => { req.header.set('x-forwarded-for', ip); return await next(req) }] })
      : createGrpcWebTransport({ baseUrl: `${s.url}/rpc`, httpVersion: '1.1', interceptors: [(next) => async (req) => { req.header.set('x-forwarded-for', ip); return await next(req) }] }))
    for (let i = 0; i < 10; i++) await limited.requestLogin({ email: `grpc-${i}-${label.length}@example.test` })
    const over = await rpcError(limited.requestLogin({ email: 'one-too-many@example.test' }))
    t.equal(over.code, Code.ResourceExhausted, `${label}: the 11th sign-in is limited`)
    t.ok(Number(over.metadata.get('retry-after')) > 0, `${label}: Retry-After`)
  }
})

t.test('the catalogue: every RPC method has its entry, and every entry is served', async (t) => {
  const served = new Set<string>()
  for (const service of [...RPC_SERVICES, ...GRPC_SERVICES]) {
    for (const method of service.methods) {
      const operation = operationOfPath(`/rpc/${service.typeName}/${method.name}`)
      t.ok(operation !== undefined && Object.hasOwn(OPERATIONS, operation), `${service.typeName}/${method.name} → ${String(operation)}`)
      if (operation !== undefined) served.add(operation)
    }
  }
  // REST operations: read from the app's own route table as it registers them, not from a hand list.
  const app = await buildApp(loadConfig(testEnv()), {
    onRoute: (route: RouteOptions) => {
      const operation = route.config?.operation
      if (typeof operation === 'string') served.add(operation)
    }
  })
  await app.close()
  t.same(Object.keys(OPERATIONS).filter((id) => !served.has(id)), [], 'no entry without a route or method')
})

t.test('a route that names no operation stops the app from starting', async (t) => {
  const app = Fastify()
  void app.register(async (scope) => {
    installAdmission(scope, { transport: 'rest', core: {} as Core, limiter: undefined, credentialOf: () => undefined, credentialRequired: '', refuse: (_request, reply) => reply })
    scope.get('/named', { config: { operation: 'rooms.getRoom' } }, async () => ({}))
    scope.get('/unnamed', async () => ({}))
  })
  await t.rejects(async () => { await app.ready() }, /GET \/unnamed: no operation in the catalogue/)
})
