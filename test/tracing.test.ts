// OpenTelemetry tracing (issue 31 item 5), exported to the SDK's in-memory exporter: a request span
// per REST and RPC request named by its route and operation, its Postgres (pg instrumentation; the
// embedded database's own spans on PGlite), Redis and storage spans in the same trace, a caller's
// W3C traceparent continued, and nothing of it without the endpoint variable.
import t from 'tap'
import * as sdk from '@opentelemetry/sdk-trace'
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace'
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api'
import { currentTraceId, samplerFromEnv, startTracing, tracingConfigured } from '../src/infra/tracing.js'

// Before the app's modules (and pg, ioredis) are loaded, as tracing-preload.ts does for `npm start`.
const exporter = new InMemorySpanExporter()
await startTracing({ exporter })
const { startApp } = await import('./helpers/app.js')
const { signInWithCookie, signInWithRpc, rpcClient } = await import('./helpers/sign-in.js')
const { RoomsService } = await import('../src/gen/app/rooms/v1/rooms_pb.js')
const { formOf, SAMPLES, uploadClient } = await import('./helpers/uploads.js')

const s = await startApp()
t.teardown(s.close)

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736'
const PARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`

function spansOf (traceId: string): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((span) => span.spanContext().traceId === traceId)
}

/** Every span of the trace descends from `root` (parent links inside the trace). */
function descendsFrom (spans: ReadableSpan[], span: ReadableSpan, root: ReadableSpan): boolean {
  const byId = new Map(spans.map((one) => [one.spanContext().spanId, one]))
  let current: ReadableSpan | undefined = span
  while (current !== undefined) {
    if (current === root) return true
    const parentId: string | undefined = current.parentSpanContext?.spanId
    current = parentId === undefined ? undefined : byId.get(parentId)
  }
  return false
}

const querySpan = (span: ReadableSpan): boolean => span.name.startsWith('pg.query') || span.name === 'pglite.query'

t.test('a REST request continues the caller\'s trace; its query spans are its children', async (t) => {
  const alice = await signInWithCookie(s)
  const created = await fetch(`${s.url}/api/rooms`, { method: 'POST', headers: { cookie: `app_session=${alice.cookie}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Traced', isPublic: false }) })
  const roomId = (await created.json() as { data: { id: string } }).data.id
  const res = await fetch(`${s.url}/api/rooms/${roomId}`, { headers: { cookie: `app_session=${alice.cookie}`, traceparent: PARENT } })
  t.equal(res.status, 200)
  t.notOk(res.headers.has('traceparent'), 'no trace context sent back')
  const spans = spansOf(TRACE_ID)
  const request = spans.find((span) => span.name === 'GET /api/rooms/:roomId')
  if (request === undefined) { t.fail(`no request span: ${spans.map((span) => span.name).join(', ')}`); return }
  t.equal(request.parentSpanContext?.spanId, '00f067aa0ba902b7', 'the caller\'s span is its parent')
  t.equal(request.attributes['app.operation'], 'rooms.getRoom')
  t.equal(request.attributes['app.transport'], 'rest')
  t.equal(request.attributes['http.response.status_code'], 200)
  const queries = spans.filter(querySpan)
  t.ok(queries.length >= 1, `query spans in the trace (${queries.length}: the room; the session is cached)`)
  t.ok(queries.every((span) => descendsFrom(spans, span, request)), 'each one a descendant of the request span')
  if (s.config.redisUrl !== undefined) t.ok(spans.some((span) => span.attributes['db.system'] === 'redis' || span.attributes['db.system.name'] === 'redis'), 'the rate-limit count in Redis')
})

t.test('an RPC call gets its span with its operation, and its queries', async (t) => {
  const bob = await signInWithRpc(s)
  const rooms = rpcClient(s, RoomsService, { token: bob.accessToken })
  const { room } = await rooms.createRoom({ name: 'Traced RPC', isPublic: false })
  exporter.reset()
  await rooms.getRoom({ roomId: room!.id })
  const request = exporter.getFinishedSpans().find((span) => span.attributes['app.operation'] === 'rooms.getRoom')
  if (request === undefined) { t.fail('no RPC request span'); return }
  t.equal(request.attributes['app.transport'], 'rpc')
  t.equal(request.name, 'app.rooms.v1.RoomsService/GetRoom', 'named after its procedure (semantic conventions)')
  t.match(request.attributes, { 'rpc.system': 'connect_rpc', 'rpc.service': 'app.rooms.v1.RoomsService', 'rpc.method': 'GetRoom', 'http.route': '/rpc/app.rooms.v1.RoomsService/GetRoom' })
  const spans = spansOf(request.spanContext().traceId)
  t.ok(spans.filter(querySpan).length >= 1, 'its queries in the same trace')
})

t.test('storage calls are spans of the request', async (t) => {
  const carol = await signInWithCookie(s)
  exporter.reset()
  const upload = await uploadClient(s).post(carol.cookie, formOf(['type', 'avatar'], { filename: 'me.png', content: SAMPLES.png, type: 'image/png' }))
  t.equal(upload.status, 201)
  const put = exporter.getFinishedSpans().find((span) => span.name === 'storage put')
  if (put === undefined) { t.fail('no storage span'); return }
  const request = exporter.getFinishedSpans().find((span) => span.name === 'POST /api/uploads')
  t.equal(put.spanContext().traceId, request?.spanContext().traceId, 'in the upload\'s trace')
})

t.test('a 404 or a 400 thrown by a REST handler leaves the server span unset; the span ends with the request', async (t) => {
  const dave = await signInWithCookie(s)
  const headers = { cookie: `app_session=${dave.cookie}` }
  exporter.reset()
  t.equal((await fetch(`${s.url}/api/rooms/room_nope`, { headers })).status, 404)
  t.equal((await fetch(`${s.url}/api/rooms`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: '{"name":""}' })).status, 400)
  const spans = exporter.getFinishedSpans()
  for (const [name, status] of [['GET /api/rooms/:roomId', 404], ['POST /api/rooms', 400]] as const) {
    const span = spans.find((one) => one.name === name)
    if (span === undefined) { t.fail(`no ${name} span: ${spans.map((one) => one.name).join(', ')}`); continue }
    t.equal(span.kind, SpanKind.SERVER)
    t.equal(span.attributes['http.response.status_code'], status)
    t.equal(span.status.code, SpanStatusCode.UNSET, `${status}: status unset (the handler threw, the client erred)`)
  }
  // The 400 was refused by its schema before any handler ran; the 404 came from the handler.
  const request = spans.find((one) => one.name === 'GET /api/rooms/:roomId')
  const handler = spans.find((one) => one.parentSpanContext?.spanId === request?.spanContext().spanId && one.name.startsWith('handler'))
  t.equal(handler?.name, 'handler rooms.getRoom', 'its handler span is named after the operation')
})

t.test('URLs in spans carry no token', async (t) => {
  exporter.reset()
  await fetch(`${s.url}/api/invites/secret-invite-token-123`)
  const spans = exporter.getFinishedSpans()
  t.ok(spans.length > 0)
  t.notMatch(JSON.stringify(spans.map((span) => span.attributes)), /secret-invite-token-123/)
})

t.test('currentTraceId: the active span\'s trace, none outside one', async (t) => {
  t.equal(currentTraceId(), undefined)
  const span = trace.getTracer('test').startSpan('outer')
  t.equal(context.with(trace.setSpan(context.active(), span), () => currentTraceId()), span.spanContext().traceId)
  span.end()
})

t.test('on only with the SDK\'s endpoint variable', async (t) => {
  t.equal(tracingConfigured({}), false)
  t.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), true)
  t.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }), true)
  t.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }), false)
})

t.test('OTEL_TRACES_SAMPLER and its argument, the specification\'s values', async (t) => {
  t.equal(samplerFromEnv({}, sdk).toString(), 'ParentBased{root=AlwaysOnSampler, remoteParentSampled=AlwaysOnSampler, remoteParentNotSampled=AlwaysOffSampler, localParentSampled=AlwaysOnSampler, localParentNotSampled=AlwaysOffSampler}')
  t.match(samplerFromEnv({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' }, sdk).toString(), /root=TraceIdRatioBased\{0\.1\}/)
  t.equal(samplerFromEnv({ OTEL_TRACES_SAMPLER: 'always_off' }, sdk).toString(), 'AlwaysOffSampler')
  t.match(samplerFromEnv({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: 'lots' }, sdk).toString(), /TraceIdRatioBased\{1\}/)
})
