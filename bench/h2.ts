// `npx tsx bench/h2.ts` (issues 18, 27): RPC GetRoom (Connect JSON, Bearer token) over cleartext
// HTTP/2 (h2c with prior knowledge, as load balancers and grpcurl -plaintext speak it) against the same
// call over HTTP/1.1, on the service's one port (src/http/listener.ts), in the same run. One load
// generator for both protocols, so its own cost does not differ between them: h2load (nghttp2;
// `apt-get install nghttp2-client`), which speaks HTTP/1.1 (`--h1`) and h2c, and logs each request's
// latency (p99 here). Autocannon cannot speak HTTP/2.
// Scenarios, each once per round, rounds interleaved (this machine drifts by tens of percent within
// minutes; ratios are medians of same-round ratios):
//   - HTTP/1.1: 50 connections, one request in flight on each;
//   - h2c: 50 connections, one stream in flight on each (the protocol's own cost);
//   - h2c: 1 connection, 50 concurrent streams (one multiplexed connection, as from a proxy).
// The service runs from dist/ in its own process with its tiers raised (bench/serve.ts) and logs at
// `info` as `npm start` does (BENCH_LOG_LEVEL=silent to compare); its CPU time per answered call is
// read from /proc. BENCH_BASELINE_ROOT=<another checkout, built, with node_modules> runs that build
// too, in the same rounds (the two going first in turn), and prints this build against it: before and
// after a change. Set DATABASE_URL / REDIS_URL for Postgres / Redis (unset: embedded PGlite, memory
// counters). BENCH_ROUNDS (3), BENCH_SECONDS (5), BENCH_CONNECTIONS (50).
import { spawnSync, type SpawnSyncReturns } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildDist, signIn, startTarget, type Target } from './harness.js'

const h2loadVersion = spawnSync('h2load', ['--version'], { encoding: 'utf8' })
if (h2loadVersion.error !== undefined || h2loadVersion.status !== 0) {
  console.error('bench/h2.ts needs h2load, one load generator for HTTP/1.1 and HTTP/2: apt-get install nghttp2-client')
  process.exit(2)
}
buildDist()
const duration = Number(process.env.BENCH_SECONDS ?? 5)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50)
const logLevel = process.env.BENCH_LOG_LEVEL ?? 'info'
const baselineRoot = process.env.BENCH_BASELINE_ROOT

const work = mkdtempSync(join(tmpdir(), 'canvas-bench-h2-'))

interface Service { name: string, target: Target, token: string, url: string, body: string }

/** A service build serving one bench user who owns one room; GetRoom of that room is the call. */
async function serve (name: string, env: Record<string, string>): Promise<Service> {
  const target = await startTarget('service', { BENCH_LOG_LEVEL: logLevel, ...env })
  const token = await signIn(target, `h2-bench-${name}-${Date.now()}@example.test`)
  const created = await fetch(`${target.url}/api/rooms`, { method: 'POST', headers: { cookie: `app_session=${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bench', isPublic: false }) })
  const roomId = (await created.json() as { data: { id: string } }).data.id
  const body = join(work, `${name}.json`)
  writeFileSync(body, JSON.stringify({ roomId }))
  return { name, target, token, url: `${target.url}/rpc/app.rooms.v1.RoomsService/GetRoom`, body }
}

const services = [await serve('this', {})]
if (baselineRoot !== undefined) services.push(await serve('baseline', { BENCH_SERVICE_ROOT: baselineRoot }))

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

function h2load (service: Service, scenario: Scenario, seconds: number, log: string): SpawnSyncReturns<string> {
  return spawnSync('h2load', [
    ...scenario.args, '-D', String(seconds), '-d', service.body,
    '-H', 'content-type: application/json', '-H', `authorization: Bearer ${service.token}`, `--log-file=${log}`, service.url
  ], { encoding: 'utf8' })
}

/** One scenario: a 1 s unmeasured warm-up, then the measured run. */
function run (service: Service, scenario: Scenario): Measurement {
  const log = join(work, 'requests.log')
  h2load(service, scenario, 1, log)
  rmSync(log, { force: true })
  const cpuBefore = cpuUsOf(service.target.child.pid)
  const result = h2load(service, scenario, duration, log)
  const cpu = cpuUsOf(service.target.child.pid) - cpuBefore
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

const key = (service: Service, scenario: Scenario): string => `${service.name}: ${scenario.name}`
const results = new Map<string, Measurement[]>()
for (let round = 1; round <= rounds; round++) {
  console.log(`round ${round} of ${rounds}`)
  // The two builds go first in turn, scenario by scenario, so neither always meets a warmer machine.
  for (const scenario of scenarios) {
    const order = round % 2 === 1 ? services : [...services].reverse()
    for (const service of order) results.set(key(service, scenario), [...(results.get(key(service, scenario)) ?? []), run(service, scenario)])
  }
}
for (const service of services) await service.target.stop()
rmSync(work, { recursive: true, force: true })

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN
const of = (name: string): Measurement[] => results.get(name) ?? []
const ratio = (a: string, b: string): number[] => of(a).map((m, i) => m.rps / (of(b)[i]?.rps ?? NaN))
const ratioLine = (label: string, values: number[]): string => `${label.padEnd(54)} ${median(values).toFixed(2)}×   per round: ${values.map((r) => r.toFixed(2)).join(', ')}`
console.log(`\nnode ${process.version}, ${h2loadVersion.stdout.trim().split('\n')[0] ?? 'h2load'}; database: ${process.env.DATABASE_URL === undefined ? 'PGlite (embedded)' : 'Postgres'}, cache: ${process.env.REDIS_URL === undefined ? 'memory' : 'Redis'}; logs: ${logLevel}; RPC GetRoom (Connect JSON); ${rounds} rounds of ${duration} s after 1 s warm-up, median round shown${baselineRoot === undefined ? '' : `; baseline: ${baselineRoot}`}`)
for (const service of services) {
  for (const scenario of scenarios) {
    const all = of(key(service, scenario))
    const m = all.find((r) => r.rps === median(all.map((x) => x.rps))) ?? all[0]!
    const bad = all.some((r) => r.non2xx + r.failed > 0) ? `   (non-2xx ${all.reduce((s, r) => s + r.non2xx, 0)}, failed ${all.reduce((s, r) => s + r.failed, 0)})` : ''
    console.log(`${key(service, scenario).padEnd(46)} ${m.rps.toFixed(0).padStart(7)} req/s   p99 ${m.p99.toFixed(1).padStart(6)} ms   service CPU ${median(all.map((r) => r.cpuUsPerCall)).toFixed(0).padStart(3)} µs/call${bad}`)
  }
}
console.log('')
const [h1, h2, mux] = scenarios as [Scenario, Scenario, Scenario]
for (const service of services) {
  console.log(ratioLine(`${service.name}: h2c / HTTP/1.1 (same connections)`, ratio(key(service, h2), key(service, h1))))
  console.log(ratioLine(`${service.name}: h2c multiplexed / HTTP/1.1`, ratio(key(service, mux), key(service, h1))))
}
const [current, baseline] = services
if (current !== undefined && baseline !== undefined) {
  for (const scenario of scenarios) console.log(ratioLine(`this build / baseline, ${scenario.name}`, ratio(key(current, scenario), key(baseline, scenario))))
}
