// `DATABASE_URL=… npx tsx bench/users.ts` (issue 21): user search over 100,000 users and display
// info of 100 ids. Seeds 100,000 users with realistic names straight into Postgres (a database of
// its own), then, 50 connections each: `GET /api/users?q=` cycling over 2–4 letter prefixes people
// type (goal p99 ≤ 20 ms), the exact-address search, RPC GetDisplayInfo of 100 ids (p99 reported),
// and `GET /api/auth/me` as the baseline of the same run. Prints the query plan of a search as the
// service issues it (index range scan, no sort). BENCH_ROUNDS (3), BENCH_SECONDS (5), BENCH_USERS (100000).
import pg from 'pg'
import { buildDist, measure, row, signIn, startTarget, type Measurement } from './harness.js'

const databaseUrl = process.env.DATABASE_URL
if (databaseUrl === undefined) {
  console.error('bench/users.ts seeds 100,000 users straight into Postgres: set DATABASE_URL (a database of its own).')
  process.exit(2)
}
buildDist()
const duration = Number(process.env.BENCH_SECONDS ?? 5)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const userCount = Number(process.env.BENCH_USERS ?? 100_000)
console.log(`node ${process.version}`)

const service = await startTarget('service', { DATABASE_URL: databaseUrl })
const cookie = { cookie: `app_session=${await signIn(service, `users-bench-${Date.now()}@example.test`)}` }

const FIRST = ['Anna', 'Andrew', 'Anton', 'Amelia', 'Boris', 'Beatrice', 'Carlos', 'Chloe', 'Daniel', 'Dmitri', 'Elena', 'Emil', 'Fatima', 'Felix', 'Grace', 'Hugo',
  'Ingrid', 'Ivan', 'Jana', 'José', 'Kenji', 'Lena', 'Lucas', 'Maria', 'Mohammed', 'Nadia', 'Noah', 'Olga', 'Oscar', 'Priya', 'Quentin', 'Rosa', 'Sofia', 'Stefan',
  'Tomás', 'Ursula', 'Victor', 'Wei', 'Xenia', 'Yusuf', 'Zoë']
const LAST = ['Andersson', 'Brown', 'Chen', 'Dubois', 'Ekström', 'Fischer', 'García', 'Hansen', 'Ivanova', 'Jensen', 'Kowalski', 'López', 'Müller', 'Nakamura',
  'Okafor', 'Petrov', 'Quinn', 'Rossi', 'Singh', 'Tanaka', 'Ueda', 'Varga', 'Weber', 'Xu', 'Yilmaz', 'Zhang']
const admin = new pg.Client({ connectionString: databaseUrl })
await admin.connect()
const seedTag = Date.now().toString(36)
const seeded = Date.now()
await admin.query(`
  insert into users (id, email, display_name, created_at, updated_at)
  select 'user_bench_' || $1 || '_' || g, 'person-' || $1 || '-' || g || '@example.test',
         ($2::text[])[1 + g % cardinality($2::text[])] || ' ' || ($3::text[])[1 + (g / cardinality($2::text[])) % cardinality($3::text[])] || ' ' || g,
         now(), now()
  from generate_series(1, $4::int) g`, [seedTag, FIRST, LAST, userCount])
// As autovacuum would after a bulk load: statistics, and the visibility map that lets a count read the index alone.
await admin.query('vacuum analyze users')
const total = (await admin.query<{ n: number }>('select count(*)::int as n from users')).rows[0]?.n ?? 0
console.log(`seeded ${userCount} users in ${((Date.now() - seeded) / 1000).toFixed(1)} s (${total} in the table)`)

// What people type: the first 2–4 letters of names, in any case.
const prefixes = [...FIRST, ...LAST].flatMap((name) => [name.slice(0, 2), name.slice(0, 3).toLowerCase(), name.slice(0, 4).toUpperCase()])
let nextPrefix = 0
const searchPath = (): string => `/api/users?q=${encodeURIComponent(prefixes[nextPrefix++ % prefixes.length] ?? 'an')}`
let nextAddress = 0
const addressPath = (): string => `/api/users?q=${encodeURIComponent(`person-${seedTag}-${1 + (nextAddress++ * 7919) % userCount}@example.test`)}`
const ids = (await admin.query<{ id: string }>('select id from users where id like $1 order by random() limit 100', [`user_bench_${seedTag}_%`])).rows.map((r) => r.id)

// The plan of the statement the repository sends (src/core/users/users.repository.ts, searchByNamePrefix).
const plan = await admin.query<{ 'QUERY PLAN': string }>(`explain (analyze, buffers, costs off)
  select id, display_name, avatar_url, created_at from users
  where lower(display_name) collate "C" like (lower($1) collate "C")
  order by lower(display_name) collate "C", id limit $2 offset $3`, ['An%', 20, 0])
console.log('\nplan of a search page (q=An):')
for (const line of plan.rows) console.log(`  ${line['QUERY PLAN']}`)
const countPlan = await admin.query<{ 'QUERY PLAN': string }>(`explain (analyze, costs off)
  select count(*)::int as total from (select 1 from users where lower(display_name) collate "C" like (lower($1) collate "C") order by lower(display_name) collate "C" limit 1000) reachable`, ['An%'])
console.log('plan of its total (only when the first page is full):')
for (const line of countPlan.rows) console.log(`  ${line['QUERY PLAN']}`)
await admin.end()

const json = { 'content-type': 'application/json' }
const rpcBearer = { authorization: `Bearer ${cookie.cookie.slice('app_session='.length)}` }
const scenarios: Array<[string, Parameters<typeof measure>[0]]> = [
  ['GET /api/auth/me (baseline)', { url: `${service.url}/api/auth/me`, headers: cookie }],
  ['GET /api/users?q=<2–4 letters>', { url: service.url, headers: cookie, requests: [{ setupRequest: (request) => ({ ...request, path: searchPath() }) }] }],
  ['GET /api/users?q=<exact address>', { url: service.url, headers: cookie, requests: [{ setupRequest: (request) => ({ ...request, path: addressPath() }) }] }],
  ['RPC GetDisplayInfo (100 ids)', { url: `${service.url}/rpc/app.users.v1.UsersService/GetDisplayInfo`, method: 'POST', headers: { ...json, ...rpcBearer }, body: JSON.stringify({ userIds: ids }) }]
]
const results = new Map<string, Measurement[]>(scenarios.map(([name]) => [name, []]))
for (let round = 1; round <= rounds; round++) {
  console.log(`round ${round} of ${rounds}`)
  for (const [name, options] of scenarios) results.get(name)?.push(await measure({ duration, ...options }))
}
await service.stop()

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN
console.log(`\nPostgres, ${userCount} users, ${rounds} rounds of ${duration} s per scenario, 50 connections (median round)`)
for (const [name] of scenarios) {
  const all = results.get(name) ?? []
  const typical = all.find((m) => m.rps === median(all.map((x) => x.rps))) ?? all[0]
  if (typical !== undefined) console.log(row(name, typical))
}
const p99 = (name: string): number => median((results.get(name) ?? []).map((m) => m.p99))
console.log(`\nsearch p99: ${p99('GET /api/users?q=<2–4 letters>')} ms (goal ≤ 20 ms); exact address p99: ${p99('GET /api/users?q=<exact address>')} ms`)
console.log(`GetDisplayInfo of 100 ids p99: ${p99('RPC GetDisplayInfo (100 ids)')} ms`)
