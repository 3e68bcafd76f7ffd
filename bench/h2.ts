// `npx tsx bench/h2.ts` (issue 18): RPC GetRoom (Connect JSON, Bearer token) over cleartext HTTP/2
// (h2c with prior knowledge, as load balancers and grpcurl -plaintext speak it) against the same
// call over HTTP/1.1, on the service's one port (src/http/listener.ts), in the same run. One load
// generator for both protocols, so its own cost does not differ between them: h2load (nghttp2;
// `apt-get install nghttp2-client`), which speaks HTTP/1.1 (`--h1`) and h2c, and logs each request's
// latency (p99 here). Autocannon cannot speak HTTP/2.
// Scenarios, each once per round, rounds interleaved (this machine drifts by tens of percent within
// minutes; ratios are medians of same-round ratios):
//   - HTTP/1.1: 50 connections, one request in flight on each;
//   - h2c: 50 connections, one stream in flight on each (the protocol's cost per call);
//   - h2c: 1 connection, 50 concurrent streams (one multiplexed connection, as from a proxy).
// The service runs from dist/ in its own process with its tiers raised (bench/serve.ts); its CPU
// time per answered call is read from /proc. Set DATABASE_URL / REDIS_URL for Postgres / Redis
// (unset: embedded PGlite, memory counters). BENCH_ROUNDS (3), BENCH_SECONDS (5), BENCH_CONNECTIONS (50).
import { spawnSync, type SpawnSyncReturns } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildDist, signIn, startTarget } from './harness.js'

const h2loadVersion = spawnSync('h2load', ['--version'], { encoding: 'utf8' })
if (h2loadVersion.error !== undefined || h2loadVersion.status !== 0) {
  console.error('bench/h2.ts needs h2load, one load generator for HTTP/1.1 and HTTP/2: apt-get install nghttp2-client')
  process.exit(2)
}
buildDist()
const duration = Number(process.env.BENCH_SECONDS ?? 5)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50)

const service = await startTarget('service')
const token = await signIn(service, `h2-bench-${Date.now()}@example.test`)
const json = { 'content-type': 'application/json' }
const created = await fetch(`${service.url}/api/rooms`, { method: 'POST', headers: { cookie: `app_session=${token}`, ...json }, body: JSON.stringify({ name: 'bench', isPublic: false }) })
const roomId = (await created.json() as { data: { id: string } }).data.id
const url = `${service.url}/rpc/app.rooms.v1.RoomsService/GetRoom`
const work = mkdtempSync(join(tmpdir(), 'canvas-bench-h2-'))
const body = join(work, 'body.json')
writeFileSync(body, JSON.stringify({ roomId }))

interface Scenario { name: string, args: string[] }
const scenarios: Scenario[] = [
  { name: `HTTP/1.1, ${connections} connections × 1`, args: ['--h1', '-c', String(connections), '-m', '1'] },
  { name: `h2c, ${connections} connections × 1 stream`, args: ['-c', String(connections), '-m', '1'] },
  { name: `h2c, 1 connection × ${connections} streams`, args: ['-c', '1', '-m', String(connections)] }
]

interface Measurement { rps: number, p99: number, done: number, non2xx: number, failed: number, cpuUsPerCall: number }

function cpuUsOf (pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${String(pid)}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
    return (Number(fields[11]) + Number(fields[12])) * 10_000 // utime + stime, clock ticks of 10 ms
  } catch {
    return NaN
  }
}

function percentile (values: Float64Array, p: number): number {
  const sorted = values.sort()
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN
}

function h2load (scenario: Scenario, seconds: number, log: string): SpawnSyncReturns<string> {
  return spawnSync('h2load', [
    ...scenario.args, '-D', String(seconds), '-d', body,
    '-H', 'content-type: application/json', '-H', `authorization: Bearer ${token}`, `--log-file=${log}`, url
  ], { encoding: 'utf8' })
}

/** One scenario: a 1 s unmeasured warm-up, then the measured run. */
function run (scenario: Scenario): Measurement {
  const log = join(work, 'requests.log')
  h2load(scenario, 1, log)
  rmSync(log, { force: true })
  const cpuBefore = cpuUsOf(service.child.pid)
  const result = h2load(scenario, duration, log)
  const cpu = cpuUsOf(service.child.pid) - cpuBefore
  const out = result.stdout
  if (result.status !== 0) throw new Error(`h2load failed: ${result.stderr}${out}`)
  const rps = Number(/finished in [\d.]+\w*, ([\d.]+) req\/s/.exec(out)?.[1])
  const [, done = '0', failed = '0', errored = '0'] = /requests: \d+ total, \d+ started, (\d+) done, \d+ succeeded, (\d+) failed, (\d+) errored/.exec(out) ?? []
  const codes = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(out) ?? []
  const lines = readFileSync(log, 'utf8').trim().split('\n')
  const latencies = Float64Array.from(lines, (line) => Number(line.split('\t')[2]) / 1000)
  return {
    rps,
    p99: percentile(latencies, 0.99),
    done: Number(done),
    non2xx: Number(codes[2] ?? 0) + Number(codes[3] ?? 0) + Number(codes[4] ?? 0),
    failed: Number(failed) + Number(errored),
    cpuUsPerCall: cpu / lines.length
  }
}

const results = new Map<string, Measurement[]>(scenarios.map((s) => [s.name, []]))
for (let round = 1; round <= rounds; round++) {
  console.log(`round ${round} of ${rounds}`)
  for (const scenario of scenarios) results.get(scenario.name)?.push(run(scenario))
}
await service.stop()
rmSync(work, { recursive: true, force: true })

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN
const of = (name: string): Measurement[] => results.get(name) ?? []
const ratio = (a: string, b: string): number[] => of(a).map((m, i) => m.rps / (of(b)[i]?.rps ?? NaN))
console.log(`\nnode ${process.version}, ${h2loadVersion.stdout.trim().split('\n')[0] ?? 'h2load'}; database: ${process.env.DATABASE_URL === undefined ? 'PGlite (embedded)' : 'Postgres'}, cache: ${process.env.REDIS_URL === undefined ? 'memory' : 'Redis'}; RPC GetRoom (Connect JSON); ${rounds} rounds of ${duration} s after 1 s warm-up, median round shown`)
for (const scenario of scenarios) {
  const all = of(scenario.name)
  const m = all.find((r) => r.rps === median(all.map((x) => x.rps))) ?? all[0]!
  const bad = all.some((r) => r.non2xx + r.failed > 0) ? `   (non-2xx ${all.reduce((s, r) => s + r.non2xx, 0)}, failed ${all.reduce((s, r) => s + r.failed, 0)})` : ''
  console.log(`${scenario.name.padEnd(36)} ${m.rps.toFixed(0).padStart(7)} req/s   p99 ${m.p99.toFixed(1).padStart(6)} ms   service CPU ${median(all.map((r) => r.cpuUsPerCall)).toFixed(0).padStart(3)} µs/call${bad}`)
}
const [h1, h2, mux] = scenarios.map((s) => s.name) as [string, string, string]
console.log(`\nh2c / HTTP/1.1 (same connections):    ${median(ratio(h2, h1)).toFixed(2)}×   per round: ${ratio(h2, h1).map((r) => r.toFixed(2)).join(', ')}`)
console.log(`h2c multiplexed / HTTP/1.1:            ${median(ratio(mux, h1)).toFixed(2)}×   per round: ${ratio(mux, h1).map((r) => r.toFixed(2)).join(', ')}`)
