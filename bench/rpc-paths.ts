// `npx tsx bench/rpc-paths.ts [label=dir[:VAR=value,…] …]`: RPC GetRoom (JSON and binary) against
// REST GetRoom, and `/me` against raw node:http, for several builds of the service in one run: other
// checkouts (a commit before a change, a variant with one piece taken out) and other settings
// (RPC_PLAIN_UNARY=false). Without arguments: this checkout as configured, and with RPC_PLAIN_UNARY=false.
// Each target is built (`npm run build` in its directory) and served from its `dist/` in a process of
// its own, on its own database: with DATABASE_URL set, a database `<name>_<label>` created afresh
// on that server for each target (a checkout's migrations are its own); else embedded PGlite.
// REDIS_URL, when set, is shared with a key prefix per target.
// Every scenario is measured once per round for every target, targets in a rotated order each round
// (the machine drifts by tens of percent over minutes); each figure is the median round, each ratio
// the median of same-round ratios. CPU per request is the service process's user + system time over
// the measured run, divided by the requests answered: on a machine other work keeps busy it moves
// less than throughput does. BENCH_ROUNDS (3), BENCH_SECONDS (5), BENCH_SCENARIOS (a subset of
// me,rest,json,binary,grpc,grpc-std; default me,rest,json,binary).
// `grpc` and `grpc-std` (issue 39): GetRoom over gRPC on h2c (binary, 50 connections × 1 stream), at
// /rpc/app.rooms.v1.RoomsService/GetRoom and at the standard path /app.rooms.v1.RoomsService/GetRoom
// that stock gRPC stubs call (src/rpc/standard-paths.ts). Autocannon speaks no HTTP/2: h2load does
// (`apt-get install nghttp2-client`). h2load cannot read a gRPC status (trailers), so before the run
// one call of each is made with a real gRPC client (Connect-ES) and must answer OK.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { createClient } from '@connectrpc/connect'
import { createGrpcTransport } from '@connectrpc/connect-node'
import { create, toBinary } from '@bufbuild/protobuf'
import autocannon from 'autocannon'
import pg from 'pg'
import { GetRoomRequestSchema, RoomsService } from '../src/gen/app/rooms/v1/rooms_pb.js'
import { buildDist, signIn, startTarget, type Target } from './harness.js'

const duration = Number(process.env.BENCH_SECONDS ?? 5)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const connections = 50

interface Spec { label: string, root: string, env: Record<string, string> }

function specOf (arg: string): Spec {
  const [head = '', settings] = arg.split(':', 2)
  const [label, dir] = head.includes('=') ? head.split('=', 2) as [string, string] : [head, '.']
  const env = Object.fromEntries((settings ?? '').split(',').filter((s) => s !== '').map((s) => s.split('=', 2) as [string, string]))
  return { label, root: resolve(dir), env }
}

const specs = process.argv.length > 2
  ? process.argv.slice(2).map(specOf)
  : [specOf('current=.'), specOf('plain-off=.:RPC_PLAIN_UNARY=false')]
for (const root of new Set(specs.map((s) => s.root))) buildDist(root)

/** A fresh database for a target, on DATABASE_URL's server. */
async function freshDatabase (label: string): Promise<string | undefined> {
  const base = process.env.DATABASE_URL
  if (base === undefined) return undefined
  const url = new URL(base)
  const name = `${url.pathname.slice(1) || 'bench'}_${label.replace(/[^a-z0-9]/gi, '_').toLowerCase()}`
  const admin = new pg.Client({ connectionString: Object.assign(new URL(base), { pathname: '/postgres' }).toString() })
  await admin.connect()
  await admin.query(`drop database if exists "${name}" with (force)`)
  await admin.query(`create database "${name}"`)
  await admin.end()
  url.pathname = `/${name}`
  return url.toString()
}

interface Served extends Spec { target: Target, cookie: string, bearer: string, roomId: string }

const raw = await startTarget('raw')
const served: Served[] = []
for (const spec of specs) {
  const databaseUrl = await freshDatabase(spec.label)
  const target = await startTarget('service', {
    BENCH_SERVICE_ROOT: spec.root,
    RATE_LIMIT_KEY_PREFIX: `bench-${spec.label}:`,
    ...(databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl }),
    ...spec.env
  })
  const token = await signIn(target, 'bench@example.test')
  const room = await (await fetch(`${target.url}/api/rooms`, {
    method: 'POST',
    headers: { cookie: `app_session=${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench', isPublic: false })
  })).json() as { data: { id: string } }
  served.push({ ...spec, target, cookie: `app_session=${token}`, bearer: `Bearer ${token}`, roomId: room.data.id })
}

interface Measurement { rps: number, p99: number, cpuUsPerRequest: number, failures: number }

const TICKS_PER_SECOND = 100
/** User + system CPU seconds of a process so far (/proc/<pid>/stat, fields 14 and 15). */
function cpuSeconds (pid: number | undefined): number {
  if (pid === undefined) return NaN
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND
}

/** A 1 s unmeasured warm-up, then the measured run. */
async function measure (pid: number | undefined, options: autocannon.Options): Promise<Measurement> {
  await autocannon({ connections, ...options, duration: 1 })
  const before = cpuSeconds(pid)
  const result = await autocannon({ connections, ...options, duration })
  const cpu = cpuSeconds(pid) - before
  return { rps: result.requests.average, p99: result.latency.p99, cpuUsPerRequest: cpu * 1e6 / result.requests.total, failures: result.errors + result.non2xx }
}

type GrpcScenario = 'RPC GetRoom gRPC /rpc' | 'RPC GetRoom gRPC standard path'
type Scenario = 'GET /api/auth/me' | 'GET /api/rooms/:roomId' | 'RPC GetRoom JSON' | 'RPC GetRoom binary' | GrpcScenario
const SCENARIO_KEYS: Record<string, Scenario> = { me: 'GET /api/auth/me', rest: 'GET /api/rooms/:roomId', json: 'RPC GetRoom JSON', binary: 'RPC GetRoom binary', grpc: 'RPC GetRoom gRPC /rpc', 'grpc-std': 'RPC GetRoom gRPC standard path' }
const SCENARIOS: Scenario[] = (process.env.BENCH_SCENARIOS ?? 'me,rest,json,binary').split(',').map((key) => {
  const scenario = SCENARIO_KEYS[key.trim()]
  if (scenario === undefined) throw new Error(`BENCH_SCENARIOS: unknown scenario "${key}" (${Object.keys(SCENARIO_KEYS).join(', ')})`)
  return scenario
})
const GRPC_PATHS: Record<GrpcScenario, string> = { 'RPC GetRoom gRPC /rpc': '/rpc/app.rooms.v1.RoomsService/GetRoom', 'RPC GetRoom gRPC standard path': '/app.rooms.v1.RoomsService/GetRoom' }
const isGrpc = (scenario: Scenario): scenario is GrpcScenario => Object.hasOwn(GRPC_PATHS, scenario)

const work = mkdtempSync(join(tmpdir(), 'canvas-bench-rpc-paths-'))
if (SCENARIOS.some(isGrpc)) {
  if (spawnSync('h2load', ['--version']).status !== 0) throw new Error('the grpc scenarios need h2load: apt-get install nghttp2-client')
  for (const s of served) {
    // The gRPC call is real on both paths: a gRPC client gets the room at each.
    for (const baseUrl of [`${s.target.url}/rpc`, s.target.url]) {
      const rooms = createClient(RoomsService, createGrpcTransport({ baseUrl }))
      const { room } = await rooms.getRoom({ roomId: s.roomId }, { headers: { authorization: s.bearer } })
      if (room?.id !== s.roomId) throw new Error(`${s.label}: gRPC GetRoom at ${baseUrl} did not answer the room`)
    }
    // One gRPC message: a flag byte (not compressed), its length (4 bytes, big-endian), the message.
    const message = toBinary(GetRoomRequestSchema, create(GetRoomRequestSchema, { roomId: s.roomId }))
    const envelope = Buffer.alloc(5 + message.length)
    envelope.writeUInt32BE(message.length, 1)
    envelope.set(message, 5)
    writeFileSync(join(work, `${s.label}.grpc`), envelope)
  }
}

/** gRPC over h2c with h2load: a 1 s unmeasured warm-up, then the measured run (`connections` × 1 stream). */
function measureGrpc (s: Served, scenario: GrpcScenario): Measurement {
  const log = join(work, 'requests.log')
  const run = (seconds: number): string => {
    rmSync(log, { force: true })
    const result = spawnSync('h2load', ['-c', String(connections), '-m', '1', '-D', String(seconds), '-d', join(work, `${s.label}.grpc`),
      '-H', 'content-type: application/grpc', '-H', 'te: trailers', '-H', `authorization: ${s.bearer}`, `--log-file=${log}`, `${s.target.url}${GRPC_PATHS[scenario]}`], { encoding: 'utf8' })
    if (result.status !== 0) throw new Error(`h2load failed: ${result.stderr}${result.stdout}`)
    return result.stdout
  }
  run(1)
  const before = cpuSeconds(s.target.child.pid)
  const out = run(duration)
  const cpu = cpuSeconds(s.target.child.pid) - before
  const latencies = readFileSync(log, 'utf8').trim().split('\n').map((line) => Number(line.split('\t')[2]) / 1000).sort((x, y) => x - y)
  const [, failed = '0', errored = '0'] = /requests: \d+ total, \d+ started, \d+ done, \d+ succeeded, (\d+) failed, (\d+) errored/.exec(out) ?? []
  const [, , r3 = '0', r4 = '0', r5 = '0'] = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(out) ?? []
  return {
    rps: Number(/finished in [\d.]+\w*, ([\d.]+) req\/s/.exec(out)?.[1]),
    p99: Math.round((latencies[Math.min(latencies.length - 1, Math.floor(0.99 * latencies.length))] ?? NaN) * 10) / 10,
    cpuUsPerRequest: cpu * 1e6 / latencies.length,
    failures: Number(failed) + Number(errored) + Number(r3) + Number(r4) + Number(r5)
  }
}

function request (s: Served, scenario: Exclude<Scenario, GrpcScenario>): autocannon.Options {
  const getRoom = `${s.target.url}/rpc/app.rooms.v1.RoomsService/GetRoom`
  switch (scenario) {
    case 'GET /api/auth/me': return { url: `${s.target.url}/api/auth/me`, headers: { cookie: s.cookie } }
    case 'GET /api/rooms/:roomId': return { url: `${s.target.url}/api/rooms/${s.roomId}`, headers: { cookie: s.cookie } }
    case 'RPC GetRoom JSON': return { url: getRoom, method: 'POST', headers: { 'content-type': 'application/json', authorization: s.bearer }, body: JSON.stringify({ roomId: s.roomId }) }
    case 'RPC GetRoom binary': return {
      url: getRoom,
      method: 'POST',
      headers: { 'content-type': 'application/proto', authorization: s.bearer },
      body: Buffer.from(toBinary(GetRoomRequestSchema, create(GetRoomRequestSchema, { roomId: s.roomId })))
    }
  }
}

const RAW = 'raw node:http'
const results = new Map<string, Measurement[]>()
const record = (key: string, m: Measurement): void => { results.set(key, [...(results.get(key) ?? []), m]) }
for (let round = 0; round < rounds; round++) {
  console.log(`round ${round + 1} of ${rounds}`)
  const order = served.map((_, i) => served[(i + round) % served.length]!)
  // /me right after the baseline it is compared with; each RPC scenario next to REST GetRoom; the
  // scenarios in reverse order every other round, so that neither of two compared always goes first.
  for (const scenario of round % 2 === 0 ? SCENARIOS : [...SCENARIOS].reverse()) {
    for (const s of order) {
      if (scenario === 'GET /api/auth/me') record(`${s.label}|${RAW}`, await measure(raw.child.pid, { url: `${raw.url}/` }))
      record(`${s.label}|${scenario}`, isGrpc(scenario) ? measureGrpc(s, scenario) : await measure(s.target.child.pid, request(s, scenario)))
    }
  }
}
await Promise.all([raw.stop(), ...served.map(async (s) => { await s.target.stop() })])
rmSync(work, { recursive: true, force: true })

function median (values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y)
  return sorted[Math.floor(sorted.length / 2)] ?? NaN
}
const roundsOf = (key: string): Measurement[] => results.get(key) ?? []
const typical = (key: string): Measurement => {
  const all = roundsOf(key)
  const rps = median(all.map((m) => m.rps))
  return all.find((m) => m.rps === rps) ?? all[0]!
}

const fixed = (value: number, digits = 2): string => Number.isFinite(value) ? value.toFixed(digits) : '—'
console.log(`\nnode ${process.version}; database: ${process.env.DATABASE_URL === undefined ? 'PGlite (embedded), one per target' : 'Postgres, one database per target'}; cache: ${process.env.REDIS_URL === undefined ? 'memory' : 'Redis'}; ${rounds} rounds of ${duration} s per scenario, ${connections} connections (median round shown)`)
const raws = served.flatMap((s) => roundsOf(`${s.label}|${RAW}`))
if (raws.length > 0) console.log(`${RAW.padEnd(44)} ${fixed(median(raws.map((m) => m.rps)), 0).padStart(8)} req/s   CPU ${fixed(median(raws.map((m) => m.cpuUsPerRequest)), 1).padStart(6)} µs/req`)
for (const s of served) {
  for (const scenario of SCENARIOS) {
    const m = typical(`${s.label}|${scenario}`)
    const failed = m.failures > 0 ? `  (${m.failures} failed)` : ''
    console.log(`${`${s.label}: ${scenario}`.padEnd(44)} ${fixed(m.rps, 0).padStart(8)} req/s   CPU ${fixed(median(roundsOf(`${s.label}|${scenario}`).map((r) => r.cpuUsPerRequest)), 1).padStart(6)} µs/req   p99 ${String(m.p99).padStart(4)} ms${failed}`)
  }
}
console.log('\nratios (median of same-round ratios; per round in brackets)')
const perRound = (a: Measurement[], b: Measurement[], of: (m: Measurement) => number = (m) => m.rps): string => a.map((m, i) => fixed(of(m) / (b[i] === undefined ? NaN : of(b[i])))).join(', ')
const medianRatio = (a: Measurement[], b: Measurement[], of: (m: Measurement) => number): number => median(a.map((m, i) => of(m) / (b[i] === undefined ? NaN : of(b[i]))))
const rps = (m: Measurement): number => m.rps
const cpu = (m: Measurement): number => m.cpuUsPerRequest
const first = served[0]!
for (const s of served) {
  const line = (what: string, a: Measurement[], b: Measurement[], of: (m: Measurement) => number): void => {
    if (a.length > 0 && b.length > 0) console.log(`${`${s.label}: ${what}`.padEnd(64)} ${fixed(medianRatio(a, b, of))}× [${perRound(a, b, of)}]`)
  }
  line('/me / raw node:http, req/s', roundsOf(`${s.label}|GET /api/auth/me`), roundsOf(`${s.label}|${RAW}`), rps)
  for (const kind of ['JSON', 'binary'] as const) {
    const rpc = roundsOf(`${s.label}|RPC GetRoom ${kind}`)
    line(`RPC GetRoom ${kind} / REST GetRoom, req/s`, rpc, roundsOf(`${s.label}|GET /api/rooms/:roomId`), rps)
    line(`RPC GetRoom ${kind} / REST GetRoom, CPU per request`, rpc, roundsOf(`${s.label}|GET /api/rooms/:roomId`), cpu)
    if (s !== first) {
      const theirs = roundsOf(`${first.label}|RPC GetRoom ${kind}`)
      line(`RPC GetRoom ${kind} / ${first.label}'s, req/s`, rpc, theirs, rps)
      line(`RPC GetRoom ${kind} / ${first.label}'s, CPU per request`, rpc, theirs, cpu)
    }
  }
  // Issue 39's goal: the standard path within 5 % of /rpc (the same route, after one URL rewrite).
  const standard = roundsOf(`${s.label}|RPC GetRoom gRPC standard path`)
  const prefixed = roundsOf(`${s.label}|RPC GetRoom gRPC /rpc`)
  line('gRPC GetRoom standard path / /rpc, req/s', standard, prefixed, rps)
  line('gRPC GetRoom standard path / /rpc, CPU per request', standard, prefixed, cpu)
}
