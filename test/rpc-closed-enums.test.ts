// Enumerations are closed (issue 26 item 2, DECISIONS §16). Every enum field of every method's
// request, found in the generated descriptors (however deep: in nested messages and lists too), is
// sent a name and a number its enum does not define — as Connect JSON and binary, over the plain
// unary route (src/rpc/connect-unary.ts) and over connect-fastify (an app with RPC_PLAIN_UNARY=false
// on the same database), and over gRPC — and must be refused `invalid_argument` with a field
// violation naming the field, never read as the default value. Defined values still pass. REST
// refuses unknown enum strings with 400 `ValidationError` naming the field.
import t from 'tap'
import { create, fromBinary, fromJson, toBinary, type DescField, type DescMessage, type DescMethod, type JsonObject, type JsonValue } from '@bufbuild/protobuf'
import { Code, ConnectError, createClient } from '@connectrpc/connect'
import { createGrpcTransport } from '@connectrpc/connect-node'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/database.js'
import { BadRequestSchema } from '../src/gen/google/rpc/error_details_pb.js'
import { RPC_SERVICES } from '../src/rpc/index.js'
import { testEnv, uniqueClientIp, type TestApp } from './helpers/app.js'
import { signInPerson } from './helpers/people.js'

const database = await openDatabase(loadConfig(testEnv()))
t.teardown(async () => { await database.close() })
async function start (overrides: Record<string, string>): Promise<TestApp> {
  const config = loadConfig(testEnv(overrides, { migrated: false }))
  const app = await buildApp(config, { database })
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, config, url, close: async () => { await app.close() } }
}
const plainRoute = await start({})
t.teardown(plainRoute.close)
const connectFastify = await start({ RPC_PLAIN_UNARY: 'false' })
t.teardown(connectFastify.close)
const caller = await signInPerson(plainRoute, 'enums')

/** One way to reach an enum field from the top of a request: a JSON request holding `value` there,
 *  and the field path the refusal must name. */
interface EnumPath { path: string, values: string[], request: (value: JsonValue) => JsonObject }

function enumPaths (message: DescMessage, seen: Set<string> = new Set()): EnumPath[] {
  if (seen.has(message.typeName) || message.typeName.startsWith('google.protobuf.')) return []
  const inner = new Set([...seen, message.typeName])
  const paths: EnumPath[] = []
  const wrap = (field: DescField, value: JsonValue): JsonValue => field.fieldKind === 'list' ? [value] : field.fieldKind === 'map' ? { key: value } : value
  const step = (field: DescField): string => field.jsonName + (field.fieldKind === 'list' ? '[0]' : field.fieldKind === 'map' ? '["key"]' : '')
  for (const field of message.fields) {
    const enumDesc = field.fieldKind === 'enum' ? field.enum : (field.fieldKind === 'list' && field.listKind === 'enum') || (field.fieldKind === 'map' && field.mapKind === 'enum') ? field.enum : undefined
    if (enumDesc !== undefined) {
      paths.push({ path: step(field), values: enumDesc.values.map((v) => v.name), request: (value) => ({ [field.jsonName]: wrap(field, value) }) })
    }
    const nested = field.fieldKind === 'message' || (field.fieldKind === 'list' && field.listKind === 'message') || (field.fieldKind === 'map' && field.mapKind === 'message') ? field.message : undefined
    if (nested !== undefined) {
      for (const deeper of enumPaths(nested, inner)) {
        paths.push({ path: `${step(field)}.${deeper.path}`, values: deeper.values, request: (value) => ({ [field.jsonName]: wrap(field, deeper.request(value)) }) })
      }
    }
  }
  return paths
}

const methods = RPC_SERVICES.flatMap((service) => service.methods.filter((method) => method.methodKind === 'unary'))
const cases = methods.flatMap((method) => enumPaths(method.input).map((enumPath) => ({ method, enumPath })))
const nameOf = (method: DescMethod): string => `${method.parent.typeName}/${method.name}`

/** The field violations of a Connect error JSON body (its BadRequest detail). */
function violationsOf (body: { details?: Array<{ type: string, value: string }> }): Array<{ field: string }> {
  const detail = body.details?.find((d) => d.type === 'google.rpc.BadRequest')
  return detail === undefined ? [] : fromBinary(BadRequestSchema, Buffer.from(detail.value, 'base64')).fieldViolations
}

t.test('the descriptors hold enum fields in requests (GenerateToken\'s role at least)', async (t) => {
  t.ok(cases.some(({ method, enumPath }) => nameOf(method) === 'app.rtc.v1.RtcService/GenerateToken' && enumPath.path === 'role'), cases.map(({ method, enumPath }) => `${nameOf(method)} ${enumPath.path}`).join(', '))
})

t.test('Connect JSON and binary, plain route and connect-fastify: an undefined name or number is invalid_argument naming the field', async (t) => {
  for (const { method, enumPath } of cases) {
    const bodies: Array<[string, string, string | Buffer]> = [
      ['a JSON name', 'application/json', JSON.stringify(enumPath.request('OWNER'))],
      ['a JSON number', 'application/json', JSON.stringify(enumPath.request(9999))],
      ['a binary number', 'application/proto', Buffer.from(toBinary(method.input, fromJson(method.input, enumPath.request(9999))))]
    ]
    for (const [target, route] of [[plainRoute, 'plain route'], [connectFastify, 'connect-fastify']] as const) {
      for (const [what, type, payload] of bodies) {
        const label = `${nameOf(method)} ${enumPath.path}: ${what}, ${route}`
        const res = await target.app.inject({
          method: 'POST',
          url: `/rpc/${nameOf(method)}`,
          headers: { 'content-type': type, authorization: `Bearer ${caller.token}`, 'x-forwarded-for': uniqueClientIp() },
          payload
        })
        t.equal(res.statusCode, 400, `${label}: 400`)
        const body = res.json()
        t.equal(body.code, 'invalid_argument', label)
        t.match(body.message, enumPath.path, `${label}: the message names the field`)
        t.same(violationsOf(body).map((v) => v.field), [enumPath.path], `${label}: one field violation`)
      }
    }
    // Every defined value is read as itself: no violation of this field, by name or by number.
    for (const [index, name] of enumPath.values.entries()) {
      for (const value of [name, index]) {
        const res = await plainRoute.app.inject({
          method: 'POST',
          url: `/rpc/${nameOf(method)}`,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${caller.token}`, 'x-forwarded-for': uniqueClientIp() },
          payload: JSON.stringify(enumPath.request(value))
        })
        const violations = res.statusCode === 200 ? [] : violationsOf(res.json())
        t.notOk(violations.some((v) => v.field === enumPath.path), `${nameOf(method)} ${enumPath.path}: ${JSON.stringify(value)} is a value (${res.statusCode})`)
      }
    }
  }
})

t.test('gRPC (binary and JSON): an undefined number is invalid_argument naming the field', async (t) => {
  for (const { method, enumPath } of cases) {
    for (const useBinaryFormat of [true, false]) {
      const transport = createGrpcTransport({
        baseUrl: `${plainRoute.url}/rpc`,
        useBinaryFormat,
        interceptors: [(next) => async (req) => { req.header.set('authorization', `Bearer ${caller.token}`); return await next(req) }]
      })
      const service = method.parent
      const client = createClient(service, transport) as unknown as Record<string, (request: unknown) => Promise<unknown>>
      let error: ConnectError | undefined
      try {
        await client[method.localName]?.(create(method.input, fromJson(method.input, enumPath.request(9999))))
      } catch (thrown) {
        error = ConnectError.from(thrown)
      }
      const label = `${nameOf(method)} ${enumPath.path}: gRPC ${useBinaryFormat ? 'binary' : 'JSON'}`
      t.equal(error?.code, Code.InvalidArgument, label)
      t.same(error?.findDetails(BadRequestSchema).flatMap((d) => d.fieldViolations.map((v) => v.field)), [enumPath.path], `${label}: the field named`)
    }
  }
})

t.test('REST: an enum value outside its list is 400 ValidationError naming the field', async (t) => {
  const office = (await caller.rest('POST', '/api/offices', { name: 'Enum office', slug: `enums-${Date.now().toString(36)}` })).json().data
  const requests: Array<[string, 'POST' | 'PATCH', string, Record<string, unknown>, string]> = [
    ['video/voice role', 'POST', '/api/rtc/token', { channelName: 'c', uid: '1', role: 'OWNER' }, 'role'],
    ['video/voice role as a number', 'POST', '/api/rtc/token', { channelName: 'c', uid: '1', role: 9 }, 'role'],
    ['invite role', 'POST', `/api/offices/${office.id as string}/invites`, { email: 'someone@example.test', role: 'boss' }, 'role'],
    ['member role', 'PATCH', `/api/offices/${office.id as string}/members/${caller.userId}`, { role: 'OWNER' }, 'role']
  ]
  for (const [label, method, url, payload, field] of requests) {
    const res = await caller.rest(method, url, payload)
    t.equal(res.statusCode, 400, label)
    t.equal(res.json().error, 'ValidationError', label)
    t.same(res.json().details.map((d: { field: string }) => d.field), [field], `${label}: names ${field}`)
  }
})
