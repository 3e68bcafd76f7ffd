// `npm run bench`: the service against a raw node:http baseline measured in the same run.
// Set DATABASE_URL (and REDIS_URL) to measure on Postgres/Redis; unset runs on embedded PGlite.
// The limiter is on (limits raised so every answer is real, see serve.ts).
// All targets run at once (an idle one costs nothing) and every scenario is measured once per round,
// rounds one after another: on a shared machine throughput drifts by tens of percent over minutes,
// and a ratio of two figures taken minutes apart measures the drift. Each scenario's median round is
// shown, each ratio is the median of the per-round ratios. BENCH_ROUNDS (3) and BENCH_SECONDS (5).
import { create, toBinary } from '@bufbuild/protobuf'
import { GetRoomRequestSchema } from '../src/gen/app/rooms/v1/rooms_pb.js'
import { buildDist, measure, row, signIn, startTarget, type Measurement } from './harness.js'

buildDist()
const duration = Number(process.env.BENCH_SECONDS ?? 5)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const raw = await startTarget('raw')
// The libraries alone: a bare Fastify route and the same call as a bare Connect method.
const frameworks = await startTarget('frameworks')
const service = await startTarget('service')

const token = await signIn(service, 'bench@example.test')
const auth = { cookie: `app_session=${token}` }
const bearer = { authorization: `Bearer ${token}` }
const json = { 'content-type': 'application/json' }
const room = await (await fetch(`${service.url}/api/rooms`, { method: 'POST', headers: { ...auth, ...json }, body: JSON.stringify({ name: 'bench', isPublic: false }) })).json() as { data: { id: string } }
const spark = await (await fetch(`${service.url}/api/sparks`, { method: 'POST', headers: { ...auth, ...json }, body: JSON.stringify({ title: 't', content: 'c', roomId: room.data.id, x: 0, y: 0 }) })).json() as { data: { id: string } }
const roomId = room.data.id
const ping = JSON.stringify({ message: 'hi' })

const scenarios: Array<[string, Parameters<typeof measure>[0]]> = [
  // Goals compare neighbours (/me with the baseline, RPC GetRoom with REST GetRoom): measured one
  // right after the other, the pair sees the same machine.
  ['raw node:http baseline', { url: `${raw.url}/` }],
  ['GET /api/auth/me (cookie)', { url: `${service.url}/api/auth/me`, headers: auth }],
  ['bare Fastify POST route (no app code)', { url: `${frameworks.url}/ping`, method: 'POST', headers: json, body: ping }],
  ['bare connect-fastify JSON method (no app code)', { url: `${frameworks.url}/rpc/app.auth.v1.AuthService/Ping`, method: 'POST', headers: json, body: ping }],
  ['GET /health', { url: `${service.url}/health` }],
  ['RPC GetMe (JSON)', { url: `${service.url}/rpc/app.auth.v1.AuthService/GetMe`, method: 'POST', headers: { ...json, ...bearer }, body: '{}' }],
  // An empty GetMeRequest encodes to zero bytes.
  ['RPC GetMe (binary)', { url: `${service.url}/rpc/app.auth.v1.AuthService/GetMe`, method: 'POST', headers: { 'content-type': 'application/proto', ...bearer }, body: '' }],
  ['GET /api/rooms/:roomId', { url: `${service.url}/api/rooms/${roomId}`, headers: auth }],
  ['RPC GetRoom (JSON)', { url: `${service.url}/rpc/app.rooms.v1.RoomsService/GetRoom`, method: 'POST', headers: { ...json, ...bearer }, body: JSON.stringify({ roomId }) }],
  ['RPC GetRoom (binary)', {
    url: `${service.url}/rpc/app.rooms.v1.RoomsService/GetRoom`,
    method: 'POST',
    headers: { 'content-type': 'application/proto', ...bearer },
    body: Buffer.from(toBinary(GetRoomRequestSchema, create(GetRoomRequestSchema, { roomId })))
  }],
  ['PATCH /api/canvas/position (50 clients)', {
    url: `${service.url}/api/canvas/position`,
    method: 'PATCH',
    headers: { ...auth, ...json },
    connections: 50,
    body: JSON.stringify({ tileId: spark.data.id, x: 33, y: 47 })
  }]
]

const results = new Map<string, Measurement[]>(scenarios.map(([name]) => [name, []]))
for (let round = 1; round <= rounds; round++) {
  console.log(`round ${round} of ${rounds}`)
  for (const [name, options] of scenarios) results.get(name)?.push(await measure({ duration, ...options }))
}
await Promise.all([raw.stop(), frameworks.stop(), service.stop()])

function median (values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y)
  return sorted[Math.floor(sorted.length / 2)] ?? NaN
}
const roundsOf = (name: string): Measurement[] => results.get(name) ?? []
/** The round whose req/s is the median of the scenario's rounds (its p99 and counts come with it). */
const typical = (name: string): Measurement => {
  const all = roundsOf(name)
  const rps = median(all.map((m) => m.rps))
  return all.find((m) => m.rps === rps) ?? all[0]!
}
/** The median over rounds of a/b, each pair measured in the same round. */
const ratio = (a: string, b: string): number => median(roundsOf(a).map((m, i) => m.rps / (roundsOf(b)[i]?.rps ?? NaN)))

const baseline = 'raw node:http baseline'
console.log(`\ndatabase: ${process.env.DATABASE_URL === undefined ? 'PGlite (embedded)' : 'Postgres'}, cache: ${process.env.REDIS_URL === undefined ? 'memory' : 'Redis'}, ${rounds} rounds of ${duration} s per scenario, 50 connections (median round shown)`)
for (const [name] of scenarios) console.log(row(name, typical(name), name === baseline ? undefined : ratio(name, baseline)))
console.log(`\nRPC GetRoom JSON / REST GetRoom: ${ratio('RPC GetRoom (JSON)', 'GET /api/rooms/:roomId').toFixed(2)}× (goal ≥ 0.8)`)
console.log(`RPC GetRoom binary / JSON:       ${ratio('RPC GetRoom (binary)', 'RPC GetRoom (JSON)').toFixed(2)}× (goal ≥ 1)`)
console.log(`bare connect-fastify / Fastify:  ${ratio('bare connect-fastify JSON method (no app code)', 'bare Fastify POST route (no app code)').toFixed(2)}× (the libraries alone; plain Connect unary calls bypass connect-fastify, src/rpc/connect-unary.ts)`)
console.log(`GET /api/auth/me / raw:          ${ratio('GET /api/auth/me (cookie)', baseline).toFixed(2)}× (goal ≥ 0.5 on Postgres)`)
console.log(`per-round ratios, /me / raw:     ${roundsOf('GET /api/auth/me (cookie)').map((m, i) => (m.rps / (roundsOf(baseline)[i]?.rps ?? NaN)).toFixed(2)).join(', ')}`)
console.log(`per-round ratios, GetRoom JSON / REST: ${roundsOf('RPC GetRoom (JSON)').map((m, i) => (m.rps / (roundsOf('GET /api/rooms/:roomId')[i]?.rps ?? NaN)).toFixed(2)).join(', ')}`)
