// Traces from the process as `npm start` runs it (issue 31 item 5): `--import` of tracing-preload
// with OTEL_EXPORTER_OTLP_ENDPOINT set, spans sent over OTLP/HTTP (protobuf) to a receiver in this
// test, flushed on SIGTERM; the access line carries the trace id. Run from the TypeScript source (tsx), as test/shutdown.test.ts does, so
// it needs no build; the preload and the server are the same modules `dist/` runs.
import t from 'tap'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Code, ConnectError, createClient } from '@connectrpc/connect'
import { createGrpcTransport } from '@connectrpc/connect-node'
import { RoomsService } from '../src/gen/app/rooms/v1/rooms_pb.js'
import { packageVersion } from '../src/infra/package-version.js'
import { decodeTraceExport, type ExportedSpan } from './helpers/otlp.js'
import { startServer } from './helpers/server-process.js'

const received: Array<{ path: string, contentType: string, body: Buffer }> = []
const receiver = createServer((request, response) => {
  const chunks: Buffer[] = []
  request.on('data', (chunk: Buffer) => chunks.push(chunk))
  request.on('end', () => {
    received.push({ path: request.url ?? '', contentType: request.headers['content-type'] ?? '', body: Buffer.concat(chunks) })
    response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end()
  })
})
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
t.teardown(() => { receiver.close() })
const endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c'

t.test('request spans reach the OTLP endpoint, in the caller\'s trace, flushed on SIGTERM', async (t) => {
  const { child, url, exited } = await startServer({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SERVICE_NAME: 'canvas-test' }, ['--import=tsx', '--import', './src/tracing-preload.ts', 'src/server.ts'])
  t.teardown(() => { child.kill('SIGKILL') })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const res = await fetch(`${url}/api/auth/me`, { headers: { traceparent: `00-${TRACE_ID}-b7ad6b7169203331-01` } })
  t.equal(res.status, 401)
  child.kill('SIGTERM')
  t.equal(await exited, 0)
  const traces = received.filter((one) => one.path === '/v1/traces')
  t.ok(traces.length > 0, 'spans exported to /v1/traces')
  t.ok(traces.every((one) => one.contentType === 'application/x-protobuf'), 'as protobuf')
  const all = Buffer.concat(traces.map((one) => one.body))
  t.ok(all.includes(Buffer.from(TRACE_ID, 'hex')), 'the caller\'s trace id')
  t.ok(all.includes(Buffer.from('GET /api/auth/me')), 'the request span, named by its route')
  t.ok(all.includes(Buffer.from('auth.getMe')), 'with its operation')
  t.ok(all.includes(Buffer.from('canvas-test')), 'the service named by OTEL_SERVICE_NAME')
  const accessLines = output.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as { msg?: string, route?: string, traceId?: string }).filter((line) => line.msg === 'request')
  t.equal(accessLines.find((line) => line.route === '/api/auth/me')?.traceId, TRACE_ID, 'the access line carries the trace id')
})

const SERVER = 2
const UNSET = 0

t.test('the export follows the semantic conventions: HTTP server spans (200, 404, 401) and RPC spans (Connect, gRPC)', async (t) => {
  const from = received.length
  const { child, url, exited } = await startServer({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SERVICE_NAME: 'canvas-semconv' }, ['--import=tsx', '--import', './src/tracing-preload.ts', 'src/server.ts'])
  t.teardown(() => { child.kill('SIGKILL') })
  const { port } = new URL(url)
  const agent = { 'user-agent': 'semconv-test/1.0' }
  t.equal((await fetch(`${url}/health?probe=yes`, { headers: agent })).status, 200)
  t.equal((await fetch(`${url}/api/no-such-thing`, { headers: agent })).status, 404)
  t.equal((await fetch(`${url}/api/auth/me`, { headers: agent })).status, 401)
  const ping = await fetch(`${url}/rpc/app.auth.v1.AuthService/Ping`, { method: 'POST', headers: { ...agent, 'content-type': 'application/json' }, body: '{"message":"hi"}' })
  t.equal(ping.status, 200)
  const grpc = createClient(RoomsService, createGrpcTransport({ baseUrl: `${url}/rpc` }))
  const refused = await grpc.getRoom({ roomId: 'room_x' }).then(() => undefined, (error: unknown) => ConnectError.from(error).code)
  t.equal(refused, Code.Unauthenticated)
  child.kill('SIGTERM')
  t.equal(await exited, 0)

  const spans = received.slice(from).filter((one) => one.path === '/v1/traces').flatMap((one) => decodeTraceExport(one.body))
  const server = spans.filter((span) => span.kind === SERVER)
  const find = (name: string, status?: number): ExportedSpan | undefined => server.find((span) => span.name === name && (status === undefined || span.attributes['http.response.status_code'] === status))

  const ok = find('GET /health', 200)
  if (ok === undefined) { t.fail(`no GET /health span: ${server.map((span) => span.name).join(', ')}`); return }
  t.equal(ok.resource['service.name'], 'canvas-semconv')
  t.equal(ok.resource['service.version'], packageVersion(), 'the resource carries service.version from package.json')
  t.match(ok.attributes, {
    'http.request.method': 'GET',
    'http.route': '/health',
    'url.path': '/health',
    'url.query': 'probe=yes',
    'url.scheme': 'http',
    'server.address': '127.0.0.1',
    'server.port': Number(port),
    'client.address': '127.0.0.1',
    'user_agent.original': 'semconv-test/1.0',
    'network.protocol.version': '1.1'
  }, 'HTTP server attributes; the query is not in url.path')
  t.equal(ok.status.code, UNSET)
  t.equal(ok.attributes['error.type'], undefined)

  for (const [name, status] of [['GET unknown route', 404], ['GET /api/auth/me', 401]] as const) {
    const span = find(name, status)
    if (span === undefined) { t.fail(`no ${name} span`); continue }
    t.equal(span.status.code, UNSET, `${status}: a client error leaves the server span's status unset`)
    t.equal(span.attributes['error.type'], undefined, `${status}: and no error.type`)
    t.equal(span.attributes['url.query'], undefined)
  }

  const connect = find('app.auth.v1.AuthService/Ping')
  if (connect === undefined) { t.fail(`no RPC span: ${server.map((span) => span.name).join(', ')}`); return }
  t.match(connect.attributes, { 'rpc.system': 'connect_rpc', 'rpc.service': 'app.auth.v1.AuthService', 'rpc.method': 'Ping', 'http.response.status_code': 200 }, 'a Connect call: rpc.system, service, method')
  t.equal(connect.attributes['rpc.connect_rpc.error_code'], undefined, 'no error code for ok')

  const grpcSpan = find('app.rooms.v1.RoomsService/GetRoom')
  if (grpcSpan === undefined) { t.fail('no gRPC span'); return }
  t.match(grpcSpan.attributes, { 'rpc.system': 'grpc', 'rpc.service': 'app.rooms.v1.RoomsService', 'rpc.method': 'GetRoom', 'rpc.grpc.status_code': Code.Unauthenticated, 'network.protocol.version': '2' }, 'a gRPC call: its status code')
  t.equal(grpcSpan.status.code, UNSET, 'UNAUTHENTICATED is the client\'s: status unset')

  const handlers = spans.filter((span) => span.name.startsWith('handler'))
  t.ok(handlers.length > 0, 'handler spans are exported')
  for (const span of handlers) t.match(span.name, /^handler [\w.]+( \S+)?$/, `handler span named sensibly: ${span.name.slice(0, 60)}`)
})
