// `npx tsx bench/telemetry.ts` (issue 31): what metrics and tracing cost, each as a ratio against the
// same service with both off, in the same run. Three instances of the service from `dist/`, logs at
// `info` as `npm start` runs it, the limiter on (tiers raised for the one bench user):
//   off       neither;
//   metrics   METRICS_PORT set, /metrics scraped once a second by this process during its run;
//   tracing   started as `npm start` does (`--import dist/src/tracing-preload.js`) with
//             OTEL_EXPORTER_OTLP_ENDPOINT pointing at an OTLP/HTTP sink in this process (it reads
//             and drops each batch), every request sampled (the SDK's default).
// Load: REST `GET /api/rooms/:roomId` with a session cookie (a request span, its query spans), 50
// connections, BENCH_SECONDS (5) after a 1 s warm-up, per round (BENCH_ROUNDS, 3) each target once,
// the order rotated per round; ratios are medians of same-round ratios. Also the service's CPU time
// per request (from /proc), which moves less than req/s when the machine is shared.
// DATABASE_URL / REDIS_URL as for the service (each instance migrates the same database).
import { createServer } from 'node:http'
import { createServer as createNetServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { buildDist, processCpuSeconds, signIn, startTarget, type Target } from './harness.js'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
type Kind = 'off' | 'metrics' | 'tracing'
const KINDS: Kind[] = ['off', 'metrics', 'tracing']

async function freePort (): Promise<number> {
  const server = createNetServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

buildDist()
let batches = 0
let bytes = 0
const sink = createServer((request, response) => {
  request.on('data', (chunk: Buffer) => { bytes += chunk.length })
  request.on('end', () => { batches++; response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end() })
})
await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve))
const otlp = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`
const metricsPort = await freePort()

const common = { BENCH_LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info' }
const targets: Record<Kind, Target> = {
  off: await startTarget('service', common),
  metrics: await startTarget('service', { ...common, METRICS_PORT: String(metricsPort) }),
  tracing: await startTarget('service', { ...common, OTEL_EXPORTER_OTLP_ENDPOINT: otlp }, ['--import', join(import.meta.dirname, '..', 'dist', 'src', 'tracing-preload.js')])
}
const paths: Record<Kind, { path: string, cookie: string }> = {} as never
for (const kind of KINDS) {
  const cookie = await signIn(targets[kind], `bench-telemetry-${kind}@example.test`)
  const created = await fetch(`${targets[kind].url}/api/rooms`, { method: 'POST', headers: { cookie: `app_session=${cookie}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Bench room', isPublic: false }) })
  const roomId = (await created.json() as { data: { id: string } }).data.id
  paths[kind] = { path: `/api/rooms/${roomId}`, cookie }
}

interface Result { rps: number, p99: number, cpuUs: number, bad: number }

async function run (kind: Kind): Promise<Result> {
  const target = targets[kind]
  const options = { url: target.url + paths[kind].path, headers: { cookie: `app_session=${paths[kind].cookie}` }, connections: 50 }
  await autocannon({ ...options, duration: 1 })
  const scraper = kind === 'metrics' ? setInterval(() => { void fetch(`http://127.0.0.1:${metricsPort}/metrics`).then(async (r) => await r.text()) }, 1000) : undefined
  const cpuBefore = processCpuSeconds(target.child.pid)
  const result = await autocannon({ ...options, duration: SECONDS })
  const cpu = processCpuSeconds(target.child.pid) - cpuBefore
  clearInterval(scraper)
  return { rps: result.requests.average, p99: result.latency.p99, cpuUs: cpu / Math.max(1, result.requests.total) * 1e6, bad: result.errors + result.non2xx }
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN
const rounds: Array<Record<Kind, Result>> = []
for (let round = 0; round < ROUNDS; round++) {
  const order = KINDS.map((_, i) => KINDS[(i + round) % KINDS.length]!)
  const results = {} as Record<Kind, Result>
  for (const kind of order) results[kind] = await run(kind)
  rounds.push(results)
  console.log(`round ${round + 1} (${order.join(', ')}): ` + KINDS.map((kind) => `${kind} ${results[kind].rps.toFixed(0)} req/s p99 ${results[kind].p99} ms ${results[kind].cpuUs.toFixed(0)} µs CPU/req${results[kind].bad > 0 ? ` (${results[kind].bad} errors/non-2xx)` : ''}`).join(' | '))
}
for (const kind of ['metrics', 'tracing'] as const) {
  const rps = median(rounds.map((r) => r[kind].rps / r.off.rps))
  const cpu = median(rounds.map((r) => r[kind].cpuUs / r.off.cpuUs))
  console.log(`${kind} on / off: req/s ${rps.toFixed(2)}× [${rounds.map((r) => (r[kind].rps / r.off.rps).toFixed(2)).join(', ')}], CPU per request ${cpu.toFixed(2)}×`)
}
console.log(`OTLP sink: ${batches} batches, ${(bytes / 1e6).toFixed(1)} MB`)
for (const target of Object.values(targets)) await target.stop()
sink.close()
