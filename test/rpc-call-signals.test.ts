// The signal a handler is given aborts when its answer is no longer wanted, on both RPC paths: the
// gateway's plain unary route (src/rpc/connect-unary.ts, call-signals.ts) and connect-fastify. The
// client going away (an HTTP/1.1 connection closed, an HTTP/2 stream cancelled) aborts it; the
// server's close aborts it only once the shutdown grace has run out, so a call in flight is answered;
// a Connect deadline aborts it (such a call goes to connect-fastify). The services run in the
// test's own app, served by the gateway's own serveRpcServices on the service's listener, with one
// method (RoomsService.GetRoom) that waits for its signal and reports it.
import t from 'tap'
import http from 'node:http'
import http2 from 'node:http2'
import Fastify, { type FastifyInstance } from 'fastify'
import { Code, ConnectError, createContextValues } from '@connectrpc/connect'
import { RoomsService } from '../src/gen/app/rooms/v1/rooms_pb.js'
import { createListener, type RequestHandler } from '../src/http/listener.js'
import { restRefusalWriter } from '../src/rest/errors.js'
import { serviceRoute } from '../src/rpc/connect-unary.js'
import { RPC_PREFIX, serveRpcServices } from '../src/rpc/index.js'

const GRACE_MS = 600
const PATH = `${RPC_PREFIX}/app.rooms.v1.RoomsService/GetRoom`
/** A deadline far away: changes nothing for the call but sends it to connect-fastify. */
const LIBRARY = { 'connect-timeout-ms': '600000' }

interface Waiting { signal: AbortSignal, route: 'plain' | 'connect-fastify', aborted: Promise<unknown> }

/** The app, and the calls its GetRoom is waiting in, by the request's roomId. */
async function signalApp (): Promise<{ app: FastifyInstance, url: string, waiting: (tag: string) => Promise<Waiting> }> {
  const calls = new Map<string, Waiting>()
  const arrivals = new Map<string, (call: Waiting) => void>()
  const app = Fastify({
    serverFactory: (handler) => createListener(handler as RequestHandler, {
      timeouts: { headersMs: 10_000, requestMs: 120_000, bodyIdleMs: 30_000, keepAliveMs: 72_000, idleMs: 120_000 },
      drainMs: 8_000,
      refuse: restRefusalWriter
    }) as http.Server,
    forceCloseConnections: false,
    return503OnClosing: false
  })
  await app.register(async (scope) => {
    await serveRpcServices(scope, [serviceRoute(RoomsService, {
      async getRoom (request, context) {
        const call: Waiting = {
          signal: context.signal,
          // Every call here that goes to connect-fastify has a deadline; the plain routes take none.
          route: context.timeoutMs() === undefined ? 'plain' : 'connect-fastify',
          aborted: new Promise((resolve) => {
            if (context.signal.aborted) resolve(context.signal.reason)
            context.signal.addEventListener('abort', () => { resolve(context.signal.reason) }, { once: true })
          })
        }
        calls.set(request.roomId, call)
        arrivals.get(request.roomId)?.(call)
        await call.aborted
        throw context.signal.reason
      }
    })], {
      plainUnary: true,
      logError: () => {},
      contextValues: () => createContextValues(),
      shutdownGraceMs: GRACE_MS
    })
  }, { prefix: RPC_PREFIX })
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  return {
    app,
    url,
    waiting: async (tag) => calls.get(tag) ?? await new Promise<Waiting>((resolve) => arrivals.set(tag, resolve))
  }
}

const { app, url, waiting } = await signalApp()
let closed: Promise<undefined> | undefined
t.teardown(async () => { await (closed ?? app.close()) })
const port = Number(new URL(url).port)

/** An HTTP/1.1 Connect call; resolves with the reply, or with `closed` when the client hung up. */
function h1Call (tag: string, headers: Record<string, string> = {}): { reply: Promise<{ status: number, body: string } | 'closed'>, hangUp: () => void } {
  const request = http.request({ port, host: '127.0.0.1', method: 'POST', path: PATH, headers: { 'content-type': 'application/json', ...headers } })
  const reply = new Promise<{ status: number, body: string } | 'closed'>((resolve) => {
    request.on('response', (response) => {
      let body = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => { body += chunk })
      response.on('end', () => { resolve({ status: response.statusCode ?? 0, body }) })
    })
    request.on('error', () => { resolve('closed') })
  })
  request.end(JSON.stringify({ roomId: tag }))
  return { reply, hangUp: () => { request.destroy() } }
}

async function within<T> (promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => { reject(new Error(`${what}: not within ${ms} ms`)) }, ms) })
  try {
    return await Promise.race([promise, late])
  } finally {
    clearTimeout(timer)
  }
}

const routes: Array<['plain' | 'connect-fastify', Record<string, string>]> = [['plain', {}], ['connect-fastify', LIBRARY]]

t.test('an HTTP/1.1 client that hangs up aborts the signal', async (t) => {
  for (const [route, headers] of routes) {
    const tag = `h1-hang-up-${route}`
    const { reply, hangUp } = h1Call(tag, headers)
    const call = await within(waiting(tag), 5_000, `${route}: the handler runs`)
    t.equal(call.route, route, `${route}: the call took that route`)
    t.notOk(call.signal.aborted, `${route}: not aborted while the client waits`)
    hangUp()
    await within(call.aborted, 2_000, `${route}: aborted once the client hung up`)
    t.ok(call.signal.aborted, `${route}: aborted once the client hung up`)
    t.equal(await reply, 'closed')
  }
})

t.test('an HTTP/2 stream the client cancels aborts the signal', async (t) => {
  const session = http2.connect(url)
  t.teardown(() => { session.close() })
  for (const [route, headers] of routes) {
    const tag = `h2-cancel-${route}`
    const stream = session.request({ ':method': 'POST', ':path': PATH, 'content-type': 'application/json', ...headers })
    stream.on('error', () => {})
    stream.end(JSON.stringify({ roomId: tag }))
    const call = await within(waiting(tag), 5_000, `${route}: the handler runs`)
    t.equal(call.route, route, `${route}: the call took that route`)
    t.notOk(call.signal.aborted, `${route}: not aborted while the stream is open`)
    stream.close(http2.constants.NGHTTP2_CANCEL)
    const reason = await within(call.aborted, 2_000, `${route}: aborted once the stream was cancelled`)
    t.equal(ConnectError.from(reason).code, Code.Canceled, `${route}: the reason is canceled`)
  }
})

t.test('a Connect deadline aborts the signal (connect-fastify) and answers deadline_exceeded', async (t) => {
  const { reply } = h1Call('deadline', { 'connect-timeout-ms': '300' })
  const call = await within(waiting('deadline'), 5_000, 'the handler runs')
  t.equal(call.route, 'connect-fastify')
  t.equal(ConnectError.from(await within(call.aborted, 3_000, 'aborted at the deadline')).code, Code.DeadlineExceeded)
  const answer = await reply
  t.not(answer, 'closed')
  if (answer !== 'closed') t.equal(JSON.parse(answer.body).code, 'deadline_exceeded')
})

// Last: it closes the app.
t.test('closing the server aborts calls in flight only when the grace ends, and they are answered', async (t) => {
  const inFlight = routes.map(([route, headers]) => ({ route, ...h1Call(`shutdown-${route}`, headers) }))
  const calls = await Promise.all(inFlight.map(async ({ route }) => await within(waiting(`shutdown-${route}`), 5_000, `${route}: the handler runs`)))
  const closing = Date.now()
  closed = app.close()
  await new Promise((resolve) => setTimeout(resolve, GRACE_MS / 3))
  for (const call of calls) t.notOk(call.signal.aborted, `${call.route}: not aborted at once when the server begins to close`)
  for (const call of calls) {
    const reason = await within(call.aborted, 5_000, `${call.route}: aborted when the grace ends`)
    t.equal(ConnectError.from(reason).code, Code.Unavailable, `${call.route}: the reason is unavailable`)
    t.ok(Date.now() - closing >= GRACE_MS - 50, `${call.route}: not before the grace ended`)
  }
  for (const { route, reply } of inFlight) {
    const answer = await reply
    t.not(answer, 'closed', `${route}: answered`)
    if (answer !== 'closed') {
      t.equal(answer.status, 503, `${route}: 503`)
      t.equal(JSON.parse(answer.body).code, 'unavailable', `${route}: unavailable`)
    }
  }
  await within(closed, 5_000, 'the server closes')
})
