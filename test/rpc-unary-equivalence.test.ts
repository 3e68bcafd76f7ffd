// Every unary method of every service, found in the generated descriptors (src/gen), answers the same
// through the gateway's plain unary route (src/rpc/connect-unary.ts) as through connect-fastify: two
// apps on one database, one as configured by default, one with RPC_PLAIN_UNARY=false, are sent the
// same calls, and must answer the same status, headers and body. A method added to a .proto is covered
// without touching this file: an empty request, an anonymous one and two malformed ones (JSON that
// does not parse, bytes that are no message), each as JSON and binary where it applies. Bodies must be
// the same bytes; a successful reply that differs is compared as data without its times (and, for a
// write, without the ids and versions it made). Methods with a
// known valid request (VALID below) are also sent that, JSON and binary. Each method is called by a
// user of its own (fresh rate-limit counters: the two apps count apart and must show the same
// figures), with a private room holding one spark, and an office, made through the core.
import t from 'tap'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { fromBinary, fromJson, toBinary, toJson, type DescMethod, type DescService, type JsonValue } from '@bufbuild/protobuf'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { buildApp } from '../src/app.js'
import { ConfigError, loadConfig } from '../src/config.js'
import type { Actor } from '../src/core/actor.js'
import { openDatabase } from '../src/db/database.js'
import { RPC_SERVICES } from '../src/rpc/index.js'
import { testEnv, uniqueClientIp, uniqueEmail, type TestApp } from './helpers/app.js'
import { signInWithRpc } from './helpers/sign-in.js'

type Route = 'plain' | 'connect-fastify'

/** An app that records which route answered each call under /rpc. */
async function recordingApp (overrides: Record<string, string>, database: Awaited<ReturnType<typeof openDatabase>>): Promise<TestApp & { routes: Route[] }> {
  const config = loadConfig(testEnv(overrides, { migrated: false }))
  const app = await buildApp(config, { database })
  const routes: Route[] = []
  // onResponse: it also sees calls the gate refused before any other hook could run.
  app.addHook('onResponse', (request, _reply, done) => {
    if (request.url.startsWith('/rpc/')) routes.push(request.routeOptions.config.connectUnary === true ? 'plain' : 'connect-fastify')
    done()
  })
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, config, url, routes, close: async () => { await app.close() } }
}

const database = await openDatabase(loadConfig(testEnv()))
t.teardown(async () => { await database.close() })
const on = await recordingApp({}, database)
t.teardown(on.close)
const off = await recordingApp({ RPC_PLAIN_UNARY: 'false' }, database)
t.teardown(off.close)

/** Every service the generated code declares (src/gen/app/<domain>/v<n>/<domain>_pb.ts). */
async function generatedServices (): Promise<DescService[]> {
  const root = join(import.meta.dirname, '..', 'src', 'gen', 'app')
  const files = readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('_pb.ts'))
  const services: DescService[] = []
  for (const file of files.sort()) {
    const exported = await import(pathToFileURL(join(root, file)).href) as Record<string, unknown>
    for (const value of Object.values(exported)) {
      if (typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'service') services.push(value as DescService)
    }
  }
  return services
}

const services = await generatedServices()
const unary = services.flatMap((service) => service.methods.filter((method) => method.methodKind === 'unary'))
const nameOf = (method: DescMethod): string => `${method.parent.typeName}/${method.name}`

interface Fixtures { userId: string, roomId: string, sparkId: string, officeId: string }
interface Maker { room (): Promise<string>, spark (): Promise<string>, office (): Promise<string> }

interface Valid {
  /** A valid request in proto JSON; called before each call, so it may make what it deletes. */
  request: (fixtures: Fixtures, make: Maker) => Promise<JsonValue> | JsonValue
  /** The call changes something: its two answers name different ids, times and versions. */
  writes?: true
}

const VALID: Record<string, Valid> = {
  'app.auth.v1.AuthService/GetMe': { request: () => ({}) },
  'app.auth.v1.AuthService/GetConfig': { request: () => ({}) },
  'app.auth.v1.AuthService/Ping': { request: () => ({ message: 'hi' }), writes: true },
  'app.rooms.v1.RoomsService/ListRooms': { request: () => ({}) },
  'app.rooms.v1.RoomsService/GetRoom': { request: ({ roomId }) => ({ roomId }) },
  'app.rooms.v1.RoomsService/CreateRoom': { request: () => ({ name: 'Made twice', description: 'd', isPublic: false }), writes: true },
  'app.rooms.v1.RoomsService/UpdateRoom': { request: ({ roomId }) => ({ roomId, name: 'Renamed' }), writes: true },
  'app.rooms.v1.RoomsService/DeleteRoom': { request: async (_, make) => ({ roomId: await make.room() }), writes: true },
  'app.sparks.v1.SparksService/ListSparks': { request: ({ roomId }) => ({ roomId }) },
  'app.sparks.v1.SparksService/GetSpark': { request: ({ sparkId }) => ({ sparkId }) },
  'app.sparks.v1.SparksService/CreateSpark': { request: ({ roomId }) => ({ roomId, title: 't', content: 'c', x: 400, y: 400 }), writes: true },
  'app.sparks.v1.SparksService/UpdateSpark': { request: ({ sparkId }) => ({ sparkId, title: 'Retitled' }), writes: true },
  'app.sparks.v1.SparksService/DeleteSpark': { request: async (_, make) => ({ sparkId: await make.spark() }), writes: true },
  'app.sparks.v1.SparksService/MoveSpark': { request: ({ sparkId }) => ({ sparkId, x: 240, y: 240 }), writes: true },
  'app.canvas.v1.CanvasService/GetCanvasState': { request: ({ roomId }) => ({ roomId }) },
  'app.canvas.v1.CanvasService/GetPresence': { request: ({ roomId }) => ({ roomId }) },
  'app.canvas.v1.CanvasService/ReportPresence': { request: ({ roomId }) => ({ roomId }), writes: true },
  'app.canvas.v1.CanvasService/ValidateLayout': { request: ({ roomId }) => ({ roomId }) },
  'app.canvas.v1.CanvasService/UpdatePosition': { request: ({ sparkId }) => ({ tileId: sparkId, x: 100, y: 100 }), writes: true },
  'app.canvas.v1.CanvasService/BatchUpdatePositions': { request: ({ sparkId }) => ({ updates: [{ tileId: sparkId, x: 200, y: 200 }] }), writes: true },
  'app.canvas.v1.CanvasService/ComputeLayout': { request: ({ roomId }) => ({ roomId, algorithm: 'force-directed' }), writes: true },
  'app.offices.v1.OfficesService/ListOffices': { request: () => ({}) },
  'app.offices.v1.OfficesService/GetOffice': { request: ({ officeId }) => ({ officeId }) },
  'app.offices.v1.OfficesService/ListMembers': { request: ({ officeId }) => ({ officeId }) },
  'app.offices.v1.OfficesService/UpdateOffice': { request: ({ officeId }) => ({ officeId, description: 'Described' }), writes: true },
  'app.offices.v1.OfficesService/DeleteOffice': { request: async (_, make) => ({ officeId: await make.office() }), writes: true },
  // An office of its own each time: one address gets at most 3 invitations a day from one office (DECISIONS §16).
  'app.offices.v1.OfficesService/InviteToOffice': { request: async (_, make) => ({ officeId: await make.office(), email: 'invited@example.test', role: 'member' }), writes: true },
  'app.users.v1.UsersService/GetUser': { request: ({ userId }) => ({ userId }) },
  'app.users.v1.UsersService/GetDisplayInfo': { request: ({ userId }) => ({ userIds: [userId] }) },
  'app.users.v1.UsersService/SearchUsers': { request: () => ({ query: 'equivalence' }) },
  'app.users.v1.UsersService/UpdateProfile': { request: () => ({ displayName: 'Renamed person' }), writes: true },
  'app.rtc.v1.RtcService/GetConfig': { request: () => ({}) }
}

/** Methods that end the caller's session even with an empty request: each call gets a new session. */
const ENDS_SESSION = new Set(['app.auth.v1.AuthService/Logout'])

/** Headers that differ between any two calls; compared by presence. */
const VOLATILE_HEADERS = new Set(['date', 'x-request-id', 'ratelimit-reset', 'x-ratelimit-reset'])
/** Keys of the times a reply may carry (the clock moves between the two calls), and of the ids and
 *  versions that differ between two calls that each make or change something. */
const TIME_KEY = /^timestamp$|At$/
const WRITE_KEY = /^(id|version)$|Id$/

interface Answer { route: Route | undefined, status: number, headers: Record<string, unknown>, body: Buffer }

function masked (value: unknown, writes: boolean): unknown {
  if (Array.isArray(value)) return value.map((inner) => masked(inner, writes))
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, TIME_KEY.test(key) || (writes && WRITE_KEY.test(key)) ? '(varies)' : masked(inner, writes)]))
}

/** A body as data: the error JSON, or the reply message decoded (binary) and written as JSON. */
function bodyData (method: DescMethod, answer: Answer): unknown {
  if (answer.status === 200 && String(answer.headers['content-type']).startsWith('application/proto')) {
    return toJson(method.output, fromBinary(method.output, answer.body), { alwaysEmitImplicit: true })
  }
  return JSON.parse(answer.body.toString()) as unknown
}

async function send (target: TestApp & { routes: Route[] }, method: DescMethod, headers: Record<string, string>, payload: string | Buffer): Promise<Answer> {
  target.routes.length = 0
  const res: LightMyRequestResponse = await target.app.inject({ method: 'POST', url: `/rpc/${nameOf(method)}`, headers, payload })
  const compared: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(res.headers)) compared[name] = VOLATILE_HEADERS.has(name) ? 'present' : value
  return { route: target.routes[0], status: res.statusCode, headers: compared, body: res.rawPayload }
}

interface Case { what: string, headers: Record<string, string>, payload: string | Buffer, valid?: Valid }

async function actorOf (app: FastifyInstance, token: string): Promise<Actor> {
  return await app.core.auth.authenticate(token)
}

t.test('RPC_PLAIN_UNARY: true by default, false turns the plain route off, anything else names the variable', async (t) => {
  t.equal(on.config.rpcPlainUnary, true)
  t.equal(off.config.rpcPlainUnary, false)
  let thrown: unknown
  try {
    loadConfig(testEnv({ RPC_PLAIN_UNARY: 'off' }, { migrated: false }))
  } catch (error) {
    thrown = error
  }
  t.ok(thrown instanceof ConfigError && thrown.variable === 'RPC_PLAIN_UNARY', String(thrown))
})

t.test('the generated services are the gateway\'s', async (t) => {
  t.same(services.map((s) => s.typeName).sort(), RPC_SERVICES.map((s) => s.typeName).sort(), 'src/gen declares exactly RPC_SERVICES (src/rpc/index.ts)')
  t.ok(unary.length >= 50, `${unary.length} unary methods`)
  const methods = new Set(unary.map(nameOf))
  for (const name of Object.keys(VALID)) t.ok(methods.has(name), `VALID names a unary method: ${name}`)
})

t.test('every unary method answers the same through the plain route and through connect-fastify', async (t) => {
  let compared = 0
  for (const method of unary) {
    const name = nameOf(method)
    const email = uniqueEmail('equivalence')
    const session = async (): Promise<string> => (await signInWithRpc(on, email)).accessToken
    const token = await session()
    const actor = await actorOf(on.app, token)
    const { rooms, sparks, offices } = on.app.core
    const make: Maker = {
      room: async () => (await rooms.create(actor, { name: 'Fixture room', isPublic: false })).id,
      spark: async () => (await sparks.create(actor, { roomId: fixtures.roomId, title: 'Fixture', content: '', x: 0, y: 0 })).id,
      office: async () => (await offices.create(actor, { name: 'Fixture office', slug: `fixture-${Math.random().toString(36).slice(2, 12)}` })).id
    }
    const fixtures: Fixtures = { userId: actor.userId, roomId: '', sparkId: '', officeId: '' }
    fixtures.roomId = await make.room()
    fixtures.sparkId = await make.spark()
    fixtures.officeId = await make.office()

    // The same client address for both apps: each counts it apart, from zero.
    const address = { 'x-forwarded-for': uniqueClientIp(), origin: 'https://client.example' }
    const json = { 'content-type': 'application/json', ...address }
    const proto = { 'content-type': 'application/proto', ...address }
    const cases: Case[] = [
      { what: 'empty JSON', headers: json, payload: '{}' },
      { what: 'empty binary', headers: proto, payload: Buffer.alloc(0) },
      { what: 'empty JSON, no token', headers: json, payload: '{}' },
      { what: 'JSON that does not parse', headers: json, payload: '{"' },
      { what: 'bytes that are no message', headers: proto, payload: Buffer.from([0x0f, 0xff, 0x00, 0x12]) }
    ]
    const valid = VALID[name]
    if (valid !== undefined) {
      cases.push({ what: 'a valid request, JSON', headers: json, payload: '', valid }, { what: 'a valid request, binary', headers: proto, payload: Buffer.alloc(0), valid })
    }

    for (const { what, headers, payload, valid } of cases) {
      const answers: Answer[] = []
      for (const target of [on, off]) {
        const callHeaders = what.endsWith('no token') ? headers : { ...headers, authorization: `Bearer ${ENDS_SESSION.has(name) ? await session() : token}` }
        let body = payload
        if (valid !== undefined) {
          const request = await valid.request(fixtures, make)
          body = headers['content-type'] === 'application/proto' ? Buffer.from(toBinary(method.input, fromJson(method.input, request))) : JSON.stringify(request)
        }
        answers.push(await send(target, method, callHeaders, body))
      }
      const [plain, library] = answers as [Answer, Answer]
      const label = `${name}, ${what}`
      t.equal(plain.route, 'plain', `${label}: the default app took the plain route`)
      t.equal(library.route, 'connect-fastify', `${label}: with RPC_PLAIN_UNARY=false, connect-fastify`)
      t.equal(plain.status, library.status, `${label}: status ${plain.status}`)
      if (valid !== undefined) t.equal(plain.status, 200, `${label}: answered 200`)
      t.same(plain.headers, library.headers, `${label}: headers`)
      if (plain.status === 200 && !plain.body.equals(library.body)) {
        // Equal but for the clock (or, for a write, the ids it made): compared as data without them.
        const writes = valid?.writes === true
        t.same(masked(bodyData(method, plain), writes), masked(bodyData(method, library), writes), `${label}: body (times${writes ? ', ids and versions' : ''} aside)`)
      } else {
        t.equal(plain.body.toString('base64'), library.body.toString('base64'), `${label}: body`)
      }
      compared++
    }
  }
  t.ok(compared >= 5 * unary.length, `${compared} calls compared`)
})
