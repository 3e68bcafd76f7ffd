// GET /metrics (issue 31 item 4): Prometheus text on METRICS_PORT only, read back with a Prometheus
// text reader (test/helpers/prometheus-text.ts); every family the issue names is there and moves after the requests that feed it.
import t from 'tap'
import net from 'node:net'
import { loadConfig } from '../src/config.js'
import { startApp, testEnv } from './helpers/app.js'
import { signInWithCookie } from './helpers/sign-in.js'
import { openStream } from './helpers/sse.js'
import { formOf, SAMPLES, uploadClient } from './helpers/uploads.js'
import { parsePrometheusText, type Family } from './helpers/prometheus-text.js'

const s = await startApp({ METRICS_PORT: '0' })
t.teardown(s.close)
const metricsPort = s.app.metricsPort()
if (metricsPort === undefined) throw new Error('no metrics listener')
const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`

async function scrape (): Promise<Map<string, Family>> {
  const response = await fetch(metricsUrl)
  if (response.status !== 200) throw new Error(`metrics: ${response.status}`)
  return parsePrometheusText(await response.text())
}

/** The value of a counter or gauge sample (the count of a histogram's) whose labels include `labels`; 0 when absent. */
function valueOf (families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number {
  const family = families.get(name)
  if (family === undefined) return 0
  const sampleName = family.type === 'histogram' ? `${name}_count` : family.type === 'counter' && !name.endsWith('_total') ? `${name}_total` : name
  const sample = family.samples.find((m) => m.name === sampleName && Object.entries(labels).every(([k, v]) => m.labels[k] === v))
  return sample?.value ?? 0
}

const FAMILIES = [
  'canvas_requests_total', 'canvas_request_duration_seconds', 'canvas_rate_limit_decisions_total', 'canvas_rate_limit_counts_total',
  'canvas_event_streams_open', 'canvas_events_delivered_total', 'canvas_event_delivery_lag_seconds', 'canvas_event_outbox_held_back_seconds',
  'canvas_db_query_errors_total', 'canvas_compute_tasks', 'canvas_compute_task_duration_seconds', 'canvas_upload_bytes_total',
  'process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds'
]

t.test('every family is present and the request-fed ones move after requests', async (t) => {
  const before = await scrape()
  const alice = await signInWithCookie(s)
  const stream = await openStream(s.url, { cookie: alice.cookie })
  t.teardown(() => { stream.close() })
  const room = await fetch(`${s.url}/api/rooms`, { method: 'POST', headers: { cookie: `app_session=${alice.cookie}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Metered', isPublic: false }) })
  t.equal(room.status, 201)
  await stream.waitFor((m) => m.event === 'message' && m.json.type === 'room:created', 10_000)
  const upload = await uploadClient(s).post(alice.cookie, formOf(['type', 'avatar'], { filename: 'me.png', content: SAMPLES.png, type: 'image/png' }))
  t.equal(upload.status, 201, upload.body.toString())
  const me = await fetch(`${s.url}/api/auth/me`, { headers: { cookie: `app_session=${alice.cookie}` } })
  t.equal(me.status, 200)
  const after = await scrape()

  for (const name of FAMILIES) t.ok(after.has(name), `${name} is served`)
  if (s.config.databaseUrl !== undefined) {
    for (const state of ['total', 'idle', 'waiting']) t.ok(after.get('canvas_db_pool_connections')?.samples.some((m) => m.labels.state === state), `pool ${state}`)
  }
  const meLabels = { operation: 'auth.getMe', transport: 'rest', status_class: '2xx' }
  t.ok(valueOf(after, 'canvas_requests_total', meLabels) > valueOf(before, 'canvas_requests_total', meLabels), 'GET /api/auth/me counted by its operation')
  t.ok(valueOf(after, 'canvas_request_duration_seconds', meLabels) >= 1, 'and timed')
  t.ok(valueOf(after, 'canvas_rate_limit_decisions_total', { tier: 'read', decision: 'allowed' }) > valueOf(before, 'canvas_rate_limit_decisions_total', { tier: 'read', decision: 'allowed' }), 'a rate-limit decision in the read tier')
  const source = s.config.redisUrl === undefined ? 'memory' : 'shared'
  t.ok(valueOf(after, 'canvas_rate_limit_counts_total', { tier: 'read', answered_by: source }) > valueOf(before, 'canvas_rate_limit_counts_total', { tier: 'read', answered_by: source }), `counts answered by ${source}`)
  t.equal(valueOf(after, 'canvas_event_streams_open'), valueOf(before, 'canvas_event_streams_open') + 1, 'the open stream')
  t.ok(valueOf(after, 'canvas_events_delivered_total') > valueOf(before, 'canvas_events_delivered_total'), 'events delivered')
  t.ok(valueOf(after, 'canvas_event_delivery_lag_seconds') > valueOf(before, 'canvas_event_delivery_lag_seconds'), 'delivery lag observed')
  t.equal(valueOf(after, 'canvas_upload_bytes_total') - valueOf(before, 'canvas_upload_bytes_total'), SAMPLES.png.length, 'the upload\'s bytes')
  t.equal(valueOf(after, 'canvas_compute_tasks', { state: 'waiting' }), 0, 'compute queue read')
  // No raw URL is a label: the route's operation is.
  const labels = after.get('canvas_requests_total')?.samples.flatMap((m) => Object.values(m.labels)) ?? []
  t.notOk(labels.some((value) => value.includes('/')), 'no label holds a path')
})

t.test('not served on the public port; nothing but GET /metrics on the metrics port', async (t) => {
  const publicAnswer = await fetch(`${s.url}/metrics`)
  t.equal(publicAnswer.status, 404)
  t.notMatch(await publicAnswer.text(), /canvas_requests_total/)
  t.equal((await fetch(`http://127.0.0.1:${metricsPort}/api/auth/me`)).status, 404)
})

t.test('METRICS_PORT: unset is off; the public port is refused', async (t) => {
  t.equal(loadConfig(testEnv({}, { migrated: false })).metricsPort, undefined)
  t.equal(loadConfig(testEnv({ METRICS_PORT: '9464' }, { migrated: false })).metricsPort, 9464)
  t.throws(() => loadConfig(testEnv({ PORT: '8080', METRICS_PORT: '8080' }, { migrated: false })), /METRICS_PORT: must differ from PORT/)
  t.throws(() => loadConfig(testEnv({ METRICS_PORT: 'nine' }, { migrated: false })), /METRICS_PORT/)
})

/** Whether a TCP connection to host:port is accepted. */
async function accepts (host: string, port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const socket = net.connect(port, host, () => { socket.destroy(); resolve(true) })
    socket.on('error', () => { resolve(false) })
  })
}

t.test('METRICS_HOST: the metrics listen on 127.0.0.1 by default, not on HOST (0.0.0.0)', async (t) => {
  t.equal(s.config.host, '0.0.0.0', 'the public HOST is every address')
  t.equal(s.config.metricsHost, '127.0.0.1')
  t.ok(await accepts('127.0.0.1', metricsPort), 'reachable on 127.0.0.1')
  // Another address of the machine (still loopback, so the test talks to nothing else): a listener on
  // 0.0.0.0 would take it, one bound to 127.0.0.1 does not.
  t.notOk(await accepts('127.0.0.2', metricsPort), 'not reachable on any other address')
  t.equal(loadConfig(testEnv({ METRICS_HOST: '0.0.0.0' }, { migrated: false })).metricsHost, '0.0.0.0', 'an operator may open it')
})
