// `npm run bench`: the service against a raw node:http baseline measured in the same run.
// Set DATABASE_URL (and REDIS_URL) to measure on Postgres/Redis; unset runs on embedded PGlite.
import { measure, row, signIn, startTarget } from './harness.js'

const duration = Number(process.env.BENCH_SECONDS ?? 5)
const raw = await startTarget('raw')
const baseline = await measure({ url: `${raw.url}/`, duration })
await raw.stop()

const service = await startTarget('service')
const token = await signIn(service, 'bench@example.test')
const results: Array<[string, Awaited<ReturnType<typeof measure>>]> = []
results.push(['GET /health', await measure({ url: `${service.url}/health`, duration })])
results.push(['GET /api/auth/me (cookie)', await measure({ url: `${service.url}/api/auth/me`, headers: { cookie: `app_session=${token}` }, duration })])
results.push(['RPC GetMe (JSON)', await measure({
  url: `${service.url}/rpc/app.auth.v1.AuthService/GetMe`, method: 'POST', duration,
  headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: '{}'
})])
results.push(['RPC GetMe (binary)', await measure({
  url: `${service.url}/rpc/app.auth.v1.AuthService/GetMe`, method: 'POST', duration,
  // An empty GetMeRequest encodes to zero bytes.
  headers: { 'content-type': 'application/proto', authorization: `Bearer ${token}` }, body: ''
})])
await service.stop()

console.log(`\ndatabase: ${process.env.DATABASE_URL === undefined ? 'PGlite (embedded)' : 'Postgres'}, cache: ${process.env.REDIS_URL === undefined ? 'memory' : 'Redis'}, ${duration} s per scenario, 50 connections`)
console.log(row('raw node:http baseline', baseline))
for (const [name, m] of results) console.log(row(name, m, baseline))
