// `npm run bench`: the service against a raw node:http baseline measured in the same run.
// Set DATABASE_URL (and REDIS_URL) to measure on Postgres/Redis; unset runs on embedded PGlite.
// The limiter is on (limits raised so every answer is real, see serve.ts).
import { create, toBinary } from '@bufbuild/protobuf'
import { GetRoomRequestSchema } from '../src/gen/app/rooms/v1/rooms_pb.js'
import { buildDist, measure, row, signIn, startTarget, type Measurement } from './harness.js'

buildDist()
const duration = Number(process.env.BENCH_SECONDS ?? 5)
const raw = await startTarget('raw')
const baseline = await measure({ url: `${raw.url}/`, duration })
await raw.stop()

// The libraries alone: a bare Fastify route and the same call as a bare Connect method.
const frameworks = await startTarget('frameworks')
const ping = JSON.stringify({ message: 'hi' })
const bareFastify = await measure({ url: `${frameworks.url}/ping`, method: 'POST', headers: { 'content-type': 'application/json' }, body: ping, duration })
const bareConnect = await measure({ url: `${frameworks.url}/rpc/app.auth.v1.AuthService/Ping`, method: 'POST', headers: { 'content-type': 'application/json' }, body: ping, duration })
await frameworks.stop()

const service = await startTarget('service')
const token = await signIn(service, 'bench@example.test')
const auth = { cookie: `app_session=${token}` }
const bearer = { authorization: `Bearer ${token}` }
const json = { 'content-type': 'application/json' }

const room = await (await fetch(`${service.url}/api/rooms`, { method: 'POST', headers: { ...auth, ...json }, body: JSON.stringify({ name: 'bench', isPublic: false }) })).json() as { data: { id: string } }
const spark = await (await fetch(`${service.url}/api/sparks`, { method: 'POST', headers: { ...auth, ...json }, body: JSON.stringify({ title: 't', content: 'c', roomId: room.data.id, x: 0, y: 0 }) })).json() as { data: { id: string } }
const roomId = room.data.id

const results: Array<[string, Measurement]> = []
const run = async (name: string, options: Parameters<typeof measure>[0]): Promise<void> => {
  results.push([name, await measure({ duration, ...options })])
}
await run('GET /health', { url: `${service.url}/health` })
await run('GET /api/auth/me (cookie)', { url: `${service.url}/api/auth/me`, headers: auth })
await run('RPC GetMe (JSON)', { url: `${service.url}/rpc/app.auth.v1.AuthService/GetMe`, method: 'POST', headers: { ...json, ...bearer }, body: '{}' })
// An empty GetMeRequest encodes to zero bytes.
await run('RPC GetMe (binary)', { url: `${service.url}/rpc/app.auth.v1.AuthService/GetMe`, method: 'POST', headers: { 'content-type': 'application/proto', ...bearer }, body: '' })
await run('GET /api/rooms/:roomId', { url: `${service.url}/api/rooms/${roomId}`, headers: auth })
await run('RPC GetRoom (JSON)', { url: `${service.url}/rpc/app.rooms.v1.RoomsService/GetRoom`, method: 'POST', headers: { ...json, ...bearer }, body: JSON.stringify({ roomId }) })
await run('RPC GetRoom (binary)', {
  url: `${service.url}/rpc/app.rooms.v1.RoomsService/GetRoom`, method: 'POST', headers: { 'content-type': 'application/proto', ...bearer },
  body: Buffer.from(toBinary(GetRoomRequestSchema, create(GetRoomRequestSchema, { roomId })))
})
await run('PATCH /api/canvas/position (50 clients)', {
  url: `${service.url}/api/canvas/position`, method: 'PATCH', headers: { ...auth, ...json }, connections: 50,
  body: JSON.stringify({ tileId: spark.data.id, x: 33, y: 47 })
})
await service.stop()

console.log(`\ndatabase: ${process.env.DATABASE_URL === undefined ? 'PGlite (embedded)' : 'Postgres'}, cache: ${process.env.REDIS_URL === undefined ? 'memory' : 'Redis'}, ${duration} s per scenario, 50 connections`)
console.log(row('raw node:http baseline', baseline))
console.log(row('bare Fastify POST route (no app code)', bareFastify, baseline))
console.log(row('bare Connect JSON method (no app code)', bareConnect, baseline))
for (const [name, m] of results) console.log(row(name, m, baseline))
const rps = (name: string): number => results.find(([n]) => n === name)?.[1].rps ?? NaN
console.log(`\nRPC GetRoom JSON / REST GetRoom: ${(rps('RPC GetRoom (JSON)') / rps('GET /api/rooms/:roomId')).toFixed(2)}× (goal ≥ 0.8)`)
console.log(`RPC GetRoom binary / JSON:       ${(rps('RPC GetRoom (binary)') / rps('RPC GetRoom (JSON)')).toFixed(2)}× (goal ≥ 1)`)
console.log(`bare Connect / bare Fastify:      ${(bareConnect.rps / bareFastify.rps).toFixed(2)}× (the libraries alone: the ceiling for RPC / REST)`)
console.log(`GET /api/auth/me / raw:          ${(rps('GET /api/auth/me (cookie)') / baseline.rps).toFixed(2)}× (goal ≥ 0.5 on Postgres)`)
