// gRPC at the paths every gRPC tool uses (DECISIONS §17), checked with clients we did not write:
// Python grpcio (the C-core stack, test/helpers/grpcio_client.py) calls `/<package>.<Service>/<Method>`
// with no /rpc prefix and gets the gateway's gate, answers and trailers-only refusals; the
// grpc.health.v1 Health service's Check reports the /health state (over time, with Watch and a
// draining process: test/grpc-health.test.ts); server reflection (v1 and v1alpha) lists every service
// and describes one, with the files it imports. Connect and gRPC-Web
// calls at those paths work too, and REST's unknown paths keep their 404 in the REST envelope.
import t from 'tap'
import { execFile, spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { create, fromBinary, toBinary, type DescMessage, type MessageInitShape } from '@bufbuild/protobuf'
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt'
import { Code, ConnectError, createClient } from '@connectrpc/connect'
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node'
import { findTrailerError } from '@connectrpc/connect/protocol-grpc'
import { AuthService, GetMeResponseSchema } from '../src/gen/app/auth/v1/auth_pb.js'
import { CreateRoomRequestSchema } from '../src/gen/app/rooms/v1/rooms_pb.js'
import { BadRequestSchema } from '../src/gen/google/rpc/error_details_pb.js'
import { Health, HealthCheckRequestSchema, HealthCheckResponse_ServingStatus as Status, HealthCheckResponseSchema } from '../src/gen/grpc/health/v1/health_pb.js'
import * as v1 from '../src/gen/grpc/reflection/v1/reflection_pb.js'
import * as v1alpha from '../src/gen/grpc/reflection/v1alpha/reflection_pb.js'
import { GRPC_SERVICES, RPC_SERVICES } from '../src/rpc/index.js'
import { startApp } from './helpers/app.js'
import { signInWithRpc } from './helpers/sign-in.js'

const PYTHON = '/usr/bin/python3'
const CLIENT = join(import.meta.dirname, 'helpers', 'grpcio_client.py')
const grpcio = spawnSync(PYTHON, ['-c', 'import grpc; print(grpc.__version__)'], { encoding: 'utf8' })
const noGrpcio = grpcio.status === 0 ? false : `Python grpcio is not installed (apt-get install python3-grpcio python3-protobuf): ${grpcio.stderr || String(grpcio.error)}`

interface Call { path: string, body?: string, bodies?: string[], metadata?: Array<[string, string]> }
interface Outcome { code: string, details: string, initial: Array<[string, string]>, trailing: Array<[string, string]>, body: string | null, bodies?: string[] }

/** Makes the calls in order on one grpcio channel (asynchronous: the server may run in this process). */
async function grpcioCalls (address: string, calls: Call[]): Promise<Outcome[]> {
  return await new Promise((resolve, reject) => {
    const child = execFile(PYTHON, [CLIENT], { timeout: 60_000 }, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`${error.message}\n${stderr}`))
      else resolve(JSON.parse(stdout) as Outcome[])
    })
    child.stdin?.end(JSON.stringify({ target: address, tls: null, calls }))
  })
}

function encode<Desc extends DescMessage> (schema: Desc, init: MessageInitShape<Desc>): string {
  return Buffer.from(toBinary(schema, create(schema, init))).toString('base64')
}

const bearer = (token: string): Array<[string, string]> => [['authorization', `Bearer ${token}`]]
const metadataOf = (outcome: Outcome): Record<string, string> => Object.fromEntries([...outcome.initial, ...outcome.trailing])
const addressOf = (url: string): string => `127.0.0.1:${new URL(url).port}`
const statusOf = (outcome: Outcome): Status => fromBinary(HealthCheckResponseSchema, Buffer.from(outcome.body ?? '', 'base64')).status
const check = (service: string): Call => ({ path: '/grpc.health.v1.Health/Check', body: encode(HealthCheckRequestSchema, { service }) })

const served = [...RPC_SERVICES, ...GRPC_SERVICES].map((s) => s.typeName).sort()

const app = await startApp()
t.teardown(app.close)

t.test('grpcio at the standard paths, no prefix: the gate, the answers and the trailers-only refusals of /rpc', { skip: noGrpcio }, async (t) => {
  const { accessToken } = await signInWithRpc(app)
  const [ok, anonymous, anonymousUnderRpc, unknownMethod, unknownService, invalid] = await grpcioCalls(addressOf(app.url), [
    { path: '/app.auth.v1.AuthService/GetMe', metadata: bearer(accessToken) },
    { path: '/app.auth.v1.AuthService/GetMe' },
    { path: '/rpc/app.auth.v1.AuthService/GetMe' },
    { path: '/app.auth.v1.AuthService/NoSuchMethod', metadata: bearer(accessToken) },
    { path: '/nothing.v1.NothingService/Call' },
    { path: '/app.rooms.v1.RoomsService/CreateRoom', body: encode(CreateRoomRequestSchema, { name: '' }), metadata: bearer(accessToken) }
  ]) as [Outcome, Outcome, Outcome, Outcome, Outcome, Outcome]

  t.equal(ok.code, 'OK', 'a stub\'s call at /app.auth.v1.AuthService/GetMe is served')
  t.ok(fromBinary(GetMeResponseSchema, Buffer.from(ok.body ?? '', 'base64')).user?.email.startsWith('user-'), 'by the gateway')
  t.same([anonymous.code, anonymous.details], ['UNAUTHENTICATED', 'A Bearer token is required.'], 'the same gate: no token is refused')
  t.same([anonymous.code, anonymous.details], [anonymousUnderRpc.code, anonymousUnderRpc.details], 'as under /rpc')
  t.match(metadataOf(anonymous), { 'ratelimit-limit': /^\d+$/, 'ratelimit-remaining': /^\d+$/ }, 'counted in its tier, with the rate-limit metadata')
  t.same([unknownMethod.code, unknownMethod.details], ['UNIMPLEMENTED', 'No procedure POST /app.auth.v1.AuthService/NoSuchMethod'], 'an unknown method is UNIMPLEMENTED')
  t.same([unknownService.code, unknownService.details], ['UNIMPLEMENTED', 'No procedure POST /nothing.v1.NothingService/Call'], 'so is an unknown service')
  t.equal(invalid.code, 'INVALID_ARGUMENT')
  const violations = findTrailerError(new Headers([...invalid.trailing, ['grpc-status', '3']]))?.findDetails(BadRequestSchema).flatMap((d) => d.fieldViolations) ?? []
  t.same(violations.map((v) => v.field), ['name'], 'with its google.rpc.BadRequest detail')
})

t.test('grpc.health.v1.Health/Check: SERVING for the server and each of its services, NOT_FOUND for another name', { skip: noGrpcio }, async (t) => {
  const outcomes = await grpcioCalls(addressOf(app.url), [check(''), check('app.rooms.v1.RoomsService'), check('grpc.health.v1.Health'), check('no.such.v1.Service'), { ...check(''), path: '/rpc/grpc.health.v1.Health/Check' }])
  const [server, rooms, health, unknown, underRpc] = outcomes as [Outcome, Outcome, Outcome, Outcome, Outcome]
  for (const [name, outcome] of [['the server', server], ['RoomsService', rooms], ['Health', health], ['under /rpc', underRpc]] as const) {
    t.equal(outcome.code, 'OK', name)
    t.equal(statusOf(outcome), Status.SERVING, `${name}: SERVING`)
  }
  t.equal(unknown.code, 'NOT_FOUND', 'an unknown service name')
  t.notOk(metadataOf(server)['ratelimit-limit'], 'the exempt tier: never counted')
})

/** Reflection requests and their answers, for one version of the protocol. */
function reflection<Req extends DescMessage, Res extends DescMessage> (request: Req, response: Res) {
  return {
    requests: (inits: Array<MessageInitShape<Req>>) => inits.map((init) => encode(request, init)),
    answers: (outcome: Outcome) => (outcome.bodies ?? []).map((body) => fromBinary(response, Buffer.from(body, 'base64')))
  }
}

for (const [version, protocol] of [['v1', reflection(v1.ServerReflectionRequestSchema, v1.ServerReflectionResponseSchema)], ['v1alpha', reflection(v1alpha.ServerReflectionRequestSchema, v1alpha.ServerReflectionResponseSchema)]] as const) {
  t.test(`server reflection ${version} (bidirectional stream): lists every service, describes one with the files it imports; an unknown symbol is NOT_FOUND on the open stream`, { skip: noGrpcio }, async (t) => {
    const [outcome] = await grpcioCalls(addressOf(app.url), [{
      path: `/grpc.reflection.${version}.ServerReflection/ServerReflectionInfo`,
      bodies: protocol.requests([
        { messageRequest: { case: 'listServices', value: '*' } },
        { messageRequest: { case: 'fileContainingSymbol', value: 'app.rooms.v1.RoomsService' } },
        { messageRequest: { case: 'fileContainingSymbol', value: 'app.rooms.v1.Nothing' } },
        { messageRequest: { case: 'fileByFilename', value: 'app/common/v1/pagination.proto' } },
        { messageRequest: { case: 'fileContainingSymbol', value: 'app.rooms.v1.RoomsService.GetRoom' } }
      ])
    }]) as [Outcome]
    t.equal(outcome.code, 'OK')
    const [list, rooms, unknown, byName, method] = protocol.answers(outcome)
    t.same(list?.messageResponse.case === 'listServicesResponse' ? list.messageResponse.value.service.map((s) => s.name) : [], served, 'every service the gateway serves')

    const files = rooms?.messageResponse.case === 'fileDescriptorResponse' ? rooms.messageResponse.value.fileDescriptorProto.map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes)) : []
    t.same(files.map((f) => f.name), ['app/rooms/v1/rooms.proto', 'app/common/v1/pagination.proto'], 'the file, then what it imports')
    const service = files[0]?.service.find((s) => s.name === 'RoomsService')
    t.same(service?.method.map((m) => [m.name, m.inputType, m.outputType]).find(([name]) => name === 'GetRoom'), ['GetRoom', '.app.rooms.v1.GetRoomRequest', '.app.rooms.v1.GetRoomResponse'], 'its methods, with their messages')
    t.equal(files[0]?.options?.goPackage, 'example.com/canvas/gen/app/rooms/v1;roomsv1', 'and its options (go_package)')

    t.equal(unknown?.messageResponse.case, 'errorResponse')
    t.equal(unknown?.messageResponse.case === 'errorResponse' ? unknown.messageResponse.value.errorCode : undefined, Code.NotFound, 'an unknown symbol')
    t.equal(byName?.messageResponse.case, 'fileDescriptorResponse', 'a file by its name')
    t.equal(method?.messageResponse.case, 'fileDescriptorResponse', 'a method\'s file by the method')
  })
}

t.test('Connect, gRPC and gRPC-Web clients at the standard paths, HTTP/1.1 and h2c', async (t) => {
  const transports = {
    gRPC: createGrpcTransport({ baseUrl: app.url }),
    'gRPC-Web': createGrpcWebTransport({ baseUrl: app.url, httpVersion: '1.1' }),
    'Connect JSON': createConnectTransport({ baseUrl: app.url, httpVersion: '1.1' }),
    'Connect binary over h2c': createConnectTransport({ baseUrl: app.url, httpVersion: '2', useBinaryFormat: true })
  }
  for (const [name, transport] of Object.entries(transports)) {
    t.equal((await createClient(AuthService, transport).ping({ message: name })).message, name, `${name}: Ping`)
    t.equal((await createClient(Health, transport).check({})).status, Status.SERVING, `${name}: Health/Check`)
    const refused = await createClient(AuthService, transport).getMe({}).catch((error: unknown) => ConnectError.from(error))
    t.equal(refused instanceof ConnectError ? refused.code : undefined, Code.Unauthenticated, `${name}: the gate`)
  }
})

t.test('reflection answers each request while the client keeps its side of the stream open (as grpc-go and grpcurl do)', async (t) => {
  const reflection = createClient(v1.ServerReflection, createGrpcTransport({ baseUrl: app.url }))
  let answered: () => void = () => {}
  const symbols = ['app.rooms.v1.RoomsService', 'grpc.health.v1.Health']
  // The next request is sent only once the previous one has its answer: the client's side stays open.
  async function * requests (): AsyncGenerator<MessageInitShape<typeof v1.ServerReflectionRequestSchema>> {
    for (const symbol of symbols) {
      const next = new Promise<void>((resolve) => { answered = resolve })
      yield { messageRequest: { case: 'fileContainingSymbol', value: symbol } }
      await next
    }
  }
  const files: string[] = []
  for await (const answer of reflection.serverReflectionInfo(requests())) {
    if (answer.messageResponse.case === 'fileDescriptorResponse') files.push(fromBinary(FileDescriptorProtoSchema, answer.messageResponse.value.fileDescriptorProto[0] ?? new Uint8Array()).name ?? '')
    answered()
  }
  t.same(files, ['app/rooms/v1/rooms.proto', 'grpc/health/v1/health.proto'])
})

t.test('a browser\'s CORS preflight at a standard path is answered as under /rpc (any origin)', async (t) => {
  const headers = { origin: 'https://elsewhere.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-grpc-web' }
  const [standard, prefixed] = await Promise.all(['/app.auth.v1.AuthService/Ping', '/rpc/app.auth.v1.AuthService/Ping'].map(async (url) => await app.app.inject({ method: 'OPTIONS', url, headers })))
  t.equal(standard?.statusCode, 204)
  t.equal(standard?.headers['access-control-allow-origin'], '*')
  t.same([standard?.statusCode, standard?.headers['access-control-allow-headers']], [prefixed?.statusCode, prefixed?.headers['access-control-allow-headers']], 'the same answer')
})

t.test('REST keeps its 404 for every other request: a browser\'s GET at such a path, other content types, other paths', async (t) => {
  const cases: Array<[string, string, Record<string, string>]> = [
    ['GET', '/app.auth.v1.AuthService/Ping', {}],
    ['POST', '/app.auth.v1.AuthService/Ping', { 'content-type': 'text/plain' }],
    ['POST', '/nope', { 'content-type': 'application/grpc' }],
    ['POST', '/api/app.auth.v1.AuthService/Ping', { 'content-type': 'application/json' }],
    ['GET', '/grpc.health.v1.Health/Check', {}]
  ]
  for (const [method, url, headers] of cases) {
    const reply = await app.app.inject({ method: method as 'GET' | 'POST', url, headers, ...(method === 'POST' ? { payload: '{}' } : {}) })
    t.equal(reply.statusCode, 404, `${method} ${url} ${headers['content-type'] ?? ''}`)
    t.match(reply.json(), { error: String, message: String }, 'in the REST envelope')
  }
})

t.test('EXPOSE=internal serves no RPC: a gRPC call at a standard path is REST\'s 404', async (t) => {
  const internal = await startApp({ EXPOSE: 'internal' })
  t.teardown(internal.close)
  const reply = await internal.app.inject({ method: 'POST', url: '/grpc.health.v1.Health/Check', headers: { 'content-type': 'application/grpc' }, payload: Buffer.alloc(5) })
  t.equal(reply.statusCode, 404)
  t.match(reply.json(), { error: String, message: String }, 'in the REST envelope')
})
