// HTTP/2 on the service's one port (DECISIONS §14): clear-text HTTP/2 with prior knowledge (h2c) next
// to HTTP/1.1, and HTTPS with ALPN when TLS is configured. Real clients: connect-node's gRPC and
// Connect transports over HTTP/2, Node's http2 client for REST and the event stream.
import t from 'tap'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import http2 from 'node:http2'
import { join } from 'node:path'
import { Code, createClient, type Interceptor } from '@connectrpc/connect'
import { createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node'
import { RoomsService } from '../src/gen/app/rooms/v1/rooms_pb.js'
import { AuthService } from '../src/gen/app/auth/v1/auth_pb.js'
import { startApp, type TestApp } from './helpers/app.js'
import { rpcError, signInPerson } from './helpers/people.js'
import { temporaryDir } from './helpers/temp-dirs.js'

function bearer (token: string): Interceptor {
  return (next) => async (request) => {
    request.header.set('authorization', `Bearer ${token}`)
    return await next(request)
  }
}

interface H2Answer { status: number, headers: http2.IncomingHttpHeaders, body: string }

/** One request over an HTTP/2 session. */
async function h2Request (session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body?: string): Promise<H2Answer> {
  return await new Promise((resolve, reject) => {
    const stream = session.request(headers, { endStream: body === undefined })
    let answerHeaders: http2.IncomingHttpHeaders = {}
    let text = ''
    stream.on('response', (h) => { answerHeaders = h })
    stream.setEncoding('utf8')
    stream.on('data', (chunk: string) => { text += chunk })
    stream.on('end', () => { resolve({ status: Number(answerHeaders[':status']), headers: answerHeaders, body: text }) })
    stream.on('error', reject)
    if (body !== undefined) stream.end(body)
  })
}

async function withApp (t: { teardown: (fn: () => Promise<void>) => void }, overrides: Record<string, string> = {}): Promise<TestApp> {
  const s = await startApp(overrides)
  t.teardown(s.close)
  return s
}

t.test('h2c: a real gRPC client and a Connect client over HTTP/2 reach the RPC gateway', async (t) => {
  const s = await withApp(t)
  const person = await signInPerson(s, 'grpc')
  const auth = { interceptors: [bearer(person.token)] }
  const grpc = createClient(RoomsService, createGrpcTransport({ baseUrl: `${s.url}/rpc`, ...auth }))
  const created = await grpc.createRoom({ name: 'Over gRPC', isPublic: false })
  t.equal(created.room?.name, 'Over gRPC')
  const fetched = await grpc.getRoom({ roomId: created.room?.id ?? '' })
  t.equal(fetched.room?.id, created.room?.id, 'GetRoom over gRPC')
  const missing = await rpcError(grpc.getRoom({ roomId: 'room_nope' }))
  t.equal(missing.code, Code.NotFound, 'errors arrive as gRPC status')

  const connectH2 = createClient(RoomsService, createConnectTransport({ baseUrl: `${s.url}/rpc`, httpVersion: '2', useBinaryFormat: true, ...auth }))
  const listed = await connectH2.listRooms({ page: 1, limit: 10 })
  t.ok(listed.rooms.some((r) => r.id === created.room?.id), 'Connect binary over HTTP/2')
  const anonymous = createClient(AuthService, createGrpcTransport({ baseUrl: `${s.url}/rpc` }))
  t.equal((await anonymous.ping({ message: 'h2' })).message, 'h2')
})

t.test('h2c: REST routes and the event stream over HTTP/2, HTTP/1.1 on the same port', async (t) => {
  const s = await withApp(t, { SSE_HEARTBEAT_MS: '200' })
  const person = await signInPerson(s, 'h2rest')
  const session = http2.connect(s.url)
  t.teardown(() => { session.close() })
  const cookie = `app_session=${person.cookie}`

  const health = await h2Request(session, { ':path': '/health' })
  t.equal(health.status, 200)
  t.equal(JSON.parse(health.body).status, 'healthy')

  const me = await h2Request(session, { ':path': '/api/auth/me', cookie })
  t.equal(me.status, 200)
  t.equal(JSON.parse(me.body).data.id, person.userId)
  t.ok(me.headers['ratelimit-limit'], 'rate-limit headers over HTTP/2')

  const created = await h2Request(session, { ':method': 'POST', ':path': '/api/rooms', cookie, 'content-type': 'application/json' }, JSON.stringify({ name: 'h2 room' }))
  t.equal(created.status, 201)
  const roomId = JSON.parse(created.body).data.id as string

  // The event stream: headers first (subscribed), then the event of a change made over HTTP/1.1.
  const stream = session.request({ ':path': '/api/sync/subscribe', cookie, accept: 'text/event-stream' })
  const streamHeaders = await new Promise<http2.IncomingHttpHeaders>((resolve) => stream.once('response', resolve))
  t.equal(streamHeaders[':status'], 200)
  t.equal(streamHeaders['content-type'], 'text/event-stream')
  t.notOk('connection' in streamHeaders, 'no Connection header on HTTP/2')
  let received = ''
  stream.setEncoding('utf8')
  const sawUpdate = new Promise<void>((resolve) => {
    stream.on('data', (chunk: string) => {
      received += chunk
      if (received.includes('"room:updated"') && received.includes('event: heartbeat')) resolve()
    })
  })
  const renamed = await fetch(`${s.url}/api/rooms/${roomId}`, { method: 'PATCH', headers: { cookie, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'renamed over h1' }) })
  t.equal(renamed.status, 200, 'HTTP/1.1 on the same port')
  await sawUpdate
  t.match(received, /"name":"renamed over h1"/, 'the event reached the HTTP/2 stream')
  stream.close()
})

t.test('TLS: ALPN offers h2 and http/1.1; plain text is refused on a TLS port', async (t) => {
  const dir = temporaryDir('canvas-tls-')
  const key = join(dir, 'key.pem')
  const cert = join(dir, 'cert.pem')
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost'], { stdio: 'ignore' })
  const s = await withApp(t, { TLS_CERT_FILE: cert, TLS_KEY_FILE: key })
  t.match(s.url, /^https:/)
  const ca = readFileSync(cert)

  const session = http2.connect(s.url, { ca, servername: 'localhost', checkServerIdentity: () => undefined })
  t.teardown(() => { session.close() })
  const health = await h2Request(session, { ':path': '/health' })
  t.equal(health.status, 200, 'h2 over TLS')
  t.equal(session.alpnProtocol, 'h2')

  const grpc = createClient(AuthService, createGrpcTransport({ baseUrl: `${s.url}/rpc`, nodeOptions: { ca, checkServerIdentity: () => undefined } }))
  t.equal((await grpc.ping({ message: 'tls' })).message, 'tls', 'gRPC over TLS')

  const https = await import('node:https')
  const h1 = await new Promise<{ status: number, alpn: unknown }>((resolve, reject) => {
    const options = { ca, checkServerIdentity: () => undefined, ALPNProtocols: ['http/1.1'] } as import('node:https').RequestOptions
    https.get(`${s.url}/health`, options, (response) => {
      response.resume()
      resolve({ status: response.statusCode ?? 0, alpn: (response.socket as import('node:tls').TLSSocket).alpnProtocol })
    }).on('error', reject)
  })
  t.same(h1, { status: 200, alpn: 'http/1.1' }, 'HTTP/1.1 over TLS')

  await t.rejects(fetch(s.url.replace('https:', 'http:') + '/health'), 'no clear text on a TLS port')
})
