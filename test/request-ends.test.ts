// Operators see every request (issue 37 item 6, DECISIONS §17): whatever ended a request — an event
// stream its client closed, a 408 the edge wrote itself (headers too slow, a body that stopped
// arriving, a request too slow as a whole; HTTP/1.1 and HTTP/2) — it leaves exactly one access line
// and one count in `canvas_requests_total`, with its true status (499 for "client closed"). RPC calls
// are counted by their gRPC / Connect code on every path (plain Connect route, connect-fastify's
// Connect, gRPC and gRPC-Web), not by the HTTP 200 a gRPC error travels in.
import t from 'tap'
import http2 from 'node:http2'
import net from 'node:net'
import { Code, ConnectError, createClient, type Interceptor } from '@connectrpc/connect'
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { RoomsService } from '../src/gen/app/rooms/v1/rooms_pb.js'
import { testEnv } from './helpers/app.js'
import { recordLogs, type LogLine } from './helpers/logs.js'
import { signInPerson } from './helpers/people.js'
import { openStream } from './helpers/sse.js'
import { parsePrometheusText } from './helpers/prometheus-text.js'

const HEADERS_MS = 1_000
const BODY_IDLE_MS = 1_000
const REQUEST_MS = 3_000

const logs = recordLogs()
const config = loadConfig(testEnv({
  LOG_LEVEL: 'info',
  METRICS_PORT: '0',
  HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
  HTTP_BODY_IDLE_TIMEOUT_MS: String(BODY_IDLE_MS),
  HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_MS)
}))
const app = await buildApp(config, { logStream: logs.stream })
const url = await app.listen({ port: 0, host: '127.0.0.1' })
t.teardown(async () => { await app.close() })
const s = { app, config, url, close: async () => {} }
const { port } = new URL(url)
const person = await signInPerson(s, 'ends')

/** `canvas_requests_total` summed over the samples whose labels include `labels`. */
async function counted (labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${app.metricsPort()!}/metrics`)).text()
  const family = parsePrometheusText(text).get('canvas_requests_total')
  return (family?.samples ?? []).filter((m) => Object.entries(labels).every(([k, v]) => m.labels[k] === v)).reduce((sum, m) => sum + m.value, 0)
}

/** The access lines of one request id, once the first is written and a moment more has passed (a
 *  second one would have been written by then). */
async function linesOf (requestId: string): Promise<LogLine[]> {
  await logs.waitFor((line) => line.msg === 'request' && line.reqId === requestId, 10_000)
  await new Promise((resolve) => setTimeout(resolve, 300))
  return logs.matching((line) => line.msg === 'request' && line.reqId === requestId)
}

t.test('an event stream the client closes: one access line with 499, one count', async (t) => {
  const labels = { operation: 'sync.subscribe', transport: 'rest', status_class: '4xx' }
  const before = await counted(labels)
  const stream = await openStream(url, { cookie: person.cookie })
  const requestId = stream.headers.get('x-request-id') ?? ''
  await new Promise((resolve) => setTimeout(resolve, 100))
  stream.close()
  const lines = await linesOf(requestId)
  t.equal(lines.length, 1, 'one line')
  t.equal(lines[0]?.status, 499, 'client closed request')
  t.equal(lines[0]?.operation, 'sync.subscribe')
  t.equal(await counted(labels) - before, 1, 'one count')
})

t.test('an event stream closed over HTTP/2 (RST_STREAM): one line with 499, one count', async (t) => {
  const labels = { operation: 'sync.subscribe', transport: 'rest', status_class: '4xx' }
  const before = await counted(labels)
  const session = http2.connect(url)
  session.on('error', () => {})
  t.teardown(() => { session.destroy() })
  const stream = session.request({ ':path': '/api/sync/subscribe', accept: 'text/event-stream', cookie: `app_session=${person.cookie}` })
  stream.on('error', () => {})
  const requestId = await new Promise<string>((resolve) => { stream.on('response', (headers) => { resolve(String(headers['x-request-id'])) }) })
  stream.close(http2.constants.NGHTTP2_CANCEL)
  const lines = await linesOf(requestId)
  t.equal(lines.length, 1, 'one line')
  t.equal(lines[0]?.status, 499, 'client closed request, though Node emits `finish` for the reset stream')
  t.equal(await counted(labels) - before, 1, 'one count')
})

t.test('an upload the client resets halfway: one line with 499, one count', async (t) => {
  const labels = { operation: 'uploads.upload', transport: 'rest', status_class: '4xx' }
  const before = await counted(labels)
  const from = logs.lines.length
  await new Promise<void>((resolve) => {
    const socket = net.connect(Number(port), '127.0.0.1', () => {
      socket.write(`POST /api/uploads HTTP/1.1\r\nHost: localhost\r\nCookie: app_session=${person.cookie}\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000\r\n\r\n--b\r\nContent-Disposition: form-data; name="type"\r\n\r\navatar\r\n--b\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n${'x'.repeat(1000)}`)
      setTimeout(() => { socket.resetAndDestroy(); resolve() }, 200)
    })
    socket.on('error', () => {})
  })
  const line = await logs.waitFor((l) => l.msg === 'request' && l.route === '/api/uploads', 10_000, from)
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.equal(logs.matching((l) => l.msg === 'request' && l.route === '/api/uploads', from).length, 1, 'one line')
  t.equal(line.status, 499)
  t.equal(await counted(labels) - before, 1, 'one count')
})

/** Writes `bytes` on a raw HTTP/1.1 connection and nothing more; resolves with what the server answered. */
async function stallAfter (bytes: string): Promise<string> {
  return await new Promise((resolve) => {
    const socket = net.connect(Number(port), '127.0.0.1', () => { socket.write(bytes) })
    let answer = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => { answer += chunk })
    socket.on('error', () => {})
    socket.on('close', () => { resolve(answer) })
  })
}

const statusOf = (answer: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1])
const requestIdOf = (answer: string): string => /\r\nX-Request-Id: ([^\r]+)\r\n/i.exec(answer)?.[1] ?? ''

t.test('HTTP/1.1 headers too slow: the 408 the parser\'s timeout writes has its line and its count', async (t) => {
  const labels = { operation: 'none', transport: 'none', status_class: '4xx' }
  const before = await counted(labels)
  const answer = await stallAfter('GET /health HTTP/1.1\r\nHost: local')
  t.equal(statusOf(answer), 408)
  const lines = await linesOf(requestIdOf(answer))
  t.equal(lines.length, 1, 'one line')
  t.equal(lines[0]?.status, 408)
  t.equal(await counted(labels) - before, 1, 'one count')
})

t.test('HTTP/1.1 body that stops arriving: the 408 is the request\'s one line and count', async (t) => {
  const labels = { operation: 'rooms.createRoom', transport: 'rest', status_class: '4xx' }
  const before = await counted(labels)
  const answer = await stallAfter(`POST /api/rooms HTTP/1.1\r\nHost: localhost\r\nCookie: app_session=${person.cookie}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":"half`)
  t.equal(statusOf(answer), 408)
  const lines = await linesOf(requestIdOf(answer))
  t.equal(lines.length, 1, 'one line')
  t.equal(lines[0]?.status, 408, 'its true status')
  t.equal(lines[0]?.operation, 'rooms.createRoom', 'with its operation')
  t.equal(await counted(labels) - before, 1, 'one count')
})

/** An HTTP/2 POST whose body is `written`, then nothing (or a byte every 300 ms with `trickle`). */
async function h2Stalled (trickle: boolean): Promise<{ status: number, requestId: string }> {
  const session = http2.connect(url)
  session.on('error', () => {})
  try {
    return await new Promise((resolve) => {
      const stream = session.request({ ':method': 'POST', ':path': '/api/rooms', cookie: `app_session=${person.cookie}`, 'content-type': 'application/json', 'content-length': '1000' })
      stream.write('{"name":"half')
      const timer = trickle ? setInterval(() => { if (!stream.closed) stream.write(' ') }, 300) : undefined
      let answer = { status: 0, requestId: '' }
      stream.on('response', (headers) => { answer = { status: Number(headers[':status']), requestId: String(headers['x-request-id']) } })
      stream.on('error', () => {})
      stream.resume()
      stream.on('close', () => { clearInterval(timer); resolve(answer) })
    })
  } finally {
    session.destroy()
  }
}

for (const [name, trickle] of [['a body that stops arriving', false], ['a request too slow as a whole', true]] as const) {
  t.test(`HTTP/2, ${name}: the 408 on the stream is one line and one count, as 408`, async (t) => {
    const labels = { operation: 'rooms.createRoom', transport: 'rest', status_class: '4xx' }
    const before = await counted(labels)
    const answer = await h2Stalled(trickle)
    t.equal(answer.status, 408)
    const lines = await linesOf(answer.requestId)
    t.equal(lines.length, 1, 'one line')
    t.equal(lines[0]?.status, 408, 'logged as 408, not as what Fastify made of the cut body')
    t.equal(await counted(labels) - before, 1, 'one count')
  })
}

function bearer (token: string): Interceptor {
  return (next) => async (request) => {
    request.header.set('authorization', `Bearer ${token}`)
    return await next(request)
  }
}

async function codeOf (call: Promise<unknown>): Promise<Code | 'ok'> {
  try {
    await call
    return 'ok'
  } catch (error) {
    return ConnectError.from(error).code
  }
}

const TRANSPORTS = {
  'gRPC (h2c)': (interceptors: Interceptor[]) => createGrpcTransport({ baseUrl: `${url}/rpc`, interceptors }),
  'gRPC-Web': (interceptors: Interceptor[]) => createGrpcWebTransport({ baseUrl: `${url}/rpc`, httpVersion: '1.1', interceptors }),
  // A deadline takes a Connect call off the plain route to connect-fastify.
  'Connect through connect-fastify': (interceptors: Interceptor[]) => createConnectTransport({ baseUrl: `${url}/rpc`, httpVersion: '1.1', defaultTimeoutMs: 10_000, interceptors }),
  'Connect, plain route': (interceptors: Interceptor[]) => createConnectTransport({ baseUrl: `${url}/rpc`, httpVersion: '1.1', interceptors })
}

for (const [name, transport] of Object.entries(TRANSPORTS)) {
  t.test(`${name}: each call counted by its code, its class the code's`, async (t) => {
    const created = await createClient(RoomsService, transport([bearer(person.token)])).createRoom({ name: `Counted ${name}`, isPublic: false })
    const roomId = created.room?.id ?? ''
    const cases = [
      { label: 'unauthenticated', interceptors: [], roomId, code: Code.Unauthenticated, statusClass: '4xx' },
      { label: 'not_found', interceptors: [bearer(person.token)], roomId: 'room_nope', code: Code.NotFound, statusClass: '4xx' },
      { label: 'ok', interceptors: [bearer(person.token)], roomId, code: 'ok' as const, statusClass: '2xx' }
    ]
    for (const one of cases) {
      const labels = { operation: 'rooms.getRoom', transport: 'rpc', code: one.label, status_class: one.statusClass }
      const before = await counted(labels)
      const from = logs.lines.length
      t.equal(await codeOf(createClient(RoomsService, transport(one.interceptors)).getRoom({ roomId: one.roomId })), one.code, `${one.label}: the client reads it`)
      const line = await logs.waitFor((l) => l.msg === 'request' && l.operation === 'rooms.getRoom', 5_000, from)
      t.equal(line.code, one.label, `${one.label}: the access line names the code`)
      t.equal(await counted(labels) - before, 1, `${one.label}: counted by its code`)
    }
  })
}

t.test('gRPC: a method that does not exist is counted as unimplemented (4xx: the gateway\'s 404), not 2xx', async (t) => {
  const labels = { transport: 'rpc', code: 'unimplemented', status_class: '4xx' }
  const before = await counted(labels)
  const session = http2.connect(url)
  session.on('error', () => {})
  t.teardown(() => { session.destroy() })
  const grpcStatus = await new Promise<string>((resolve) => {
    const stream = session.request({ ':method': 'POST', ':path': '/rpc/app.rooms.v1.RoomsService/NoSuchMethod', 'content-type': 'application/grpc', te: 'trailers' })
    stream.end(Buffer.alloc(5))
    stream.on('response', (headers) => { resolve(String(headers['grpc-status'])) })
    stream.on('error', () => {})
    stream.resume()
  })
  t.equal(grpcStatus, String(Code.Unimplemented))
  await logs.waitFor((l) => l.msg === 'request' && l.code === 'unimplemented')
  t.equal(await counted(labels) - before, 1)
})
