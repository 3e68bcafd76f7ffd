// `DATABASE_URL=… npx tsx bench/offices.ts`: reading an office costs what reading a room costs
// (issue 20: goal ≥ 0.8×, the role check must not add a round trip). A member of an office with
// 1,000 members asks for it over REST and RPC, against GET /api/rooms/:roomId in the same run
// (interleaved rounds, median of per-round ratios, 50 connections), and lists its members 100 at a
// time (p99 reported). Postgres only: the 1,000 members are inserted straight into the database.
// BENCH_ROUNDS (3), BENCH_SECONDS (5).
import pg from 'pg'
import { buildDist, measure, row, signIn, startTarget, type Measurement } from './harness.js'

const databaseUrl = process.env.DATABASE_URL
if (databaseUrl === undefined) {
  console.error('bench/offices.ts seeds 1,000 members straight into Postgres: set DATABASE_URL (a database of its own).')
  process.exit(2)
}
buildDist()
const duration = Number(process.env.BENCH_SECONDS ?? 5)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const service = await startTarget('service')
const token = await signIn(service, `offices-bench-${Date.now()}@example.test`)
const cookie = { cookie: `app_session=${token}` }
const bearer = { authorization: `Bearer ${token}` }
const json = { 'content-type': 'application/json' }
const post = async (path: string, body: unknown): Promise<{ data: { id: string } }> =>
  await (await fetch(`${service.url}${path}`, { method: 'POST', headers: { ...cookie, ...json }, body: JSON.stringify(body) })).json() as { data: { id: string } }

const roomId = (await post('/api/rooms', { name: 'bench', isPublic: false })).data.id
const officeId = (await post('/api/offices', { name: 'Big office', slug: `big-${Date.now()}` })).data.id
const client = new pg.Client({ connectionString: databaseUrl })
await client.connect()
await client.query(`
  with people as (
    insert into users (id, email, display_name, search_key, created_at, updated_at)
    select 'user_bench_' || $2 || '_' || g, 'bench-' || $2 || '-' || g || '@example.test', 'Member ' || g, 'member ' || g, now(), now()
    from generate_series(1, 999) g
    returning id
  )
  insert into office_members (office_id, user_id, role, joined_at) select $1, id, 'member', now() from people`, [officeId, Date.now().toString(36)])
const members = (await client.query<{ n: number }>('select count(*)::int as n from office_members where office_id = $1', [officeId])).rows[0]?.n
await client.end()
console.log(`office with ${String(members)} members`)

const scenarios: Array<[string, Parameters<typeof measure>[0]]> = [
  ['GET /api/rooms/:roomId', { url: `${service.url}/api/rooms/${roomId}`, headers: cookie }],
  ['GET /api/offices/:officeId', { url: `${service.url}/api/offices/${officeId}`, headers: cookie }],
  ['RPC GetOffice (JSON)', { url: `${service.url}/rpc/app.offices.v1.OfficesService/GetOffice`, method: 'POST', headers: { ...json, ...bearer }, body: JSON.stringify({ officeId }) }],
  ['GET /api/offices/:officeId/members?limit=100', { url: `${service.url}/api/offices/${officeId}/members?limit=100`, headers: cookie }]
]
const results = new Map<string, Measurement[]>(scenarios.map(([name]) => [name, []]))
for (let round = 1; round <= rounds; round++) {
  console.log(`round ${round} of ${rounds}`)
  for (const [name, options] of scenarios) results.get(name)?.push(await measure({ duration, ...options }))
}
await service.stop()

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN
const of = (name: string): Measurement[] => results.get(name) ?? []
const ratio = (a: string, b: string): number => median(of(a).map((m, i) => m.rps / (of(b)[i]?.rps ?? NaN)))
console.log(`\nPostgres, ${rounds} rounds of ${duration} s per scenario, 50 connections (median round's req/s and p99)`)
for (const [name] of scenarios) {
  const all = of(name)
  const typical = all.find((m) => m.rps === median(all.map((x) => x.rps))) ?? all[0]
  if (typical !== undefined) console.log(row(name, typical))
}
console.log(`\nREST GetOffice / REST GetRoom: ${ratio('GET /api/offices/:officeId', 'GET /api/rooms/:roomId').toFixed(2)}× (goal ≥ 0.8)`)
console.log(`RPC GetOffice / REST GetRoom:  ${ratio('RPC GetOffice (JSON)', 'GET /api/rooms/:roomId').toFixed(2)}× (goal ≥ 0.8)`)
console.log(`ListMembers (100 of 1,000) p99: ${median(of('GET /api/offices/:officeId/members?limit=100').map((m) => m.p99))} ms`)
