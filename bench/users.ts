// `DATABASE_URL=… npx tsx bench/users.ts` (issue 21): user search over 100,000 users and display
// info of 100 ids. Seeds 100,000 users with realistic names straight into Postgres (a database of
// its own), then, 50 connections each: `GET /api/users?q=` cycling over 2–4 letter prefixes people
// type (goal p99 ≤ 20 ms), the exact-address search, RPC GetDisplayInfo of 100 ids (p99 reported),
// and `GET /api/auth/me` as the baseline of the same run. Prints the query plan of a search as the
// service issues it (index range scan, no sort). BENCH_ROUNDS (3), BENCH_SECONDS (5), BENCH_USERS (100000).
// BENCH_BASELINE_ROOT (another checkout, built, e.g. of main) with BENCH_BASELINE_DATABASE_URL (a
// database of its own: the schemas may differ) measures that build on the same users in the same
// rounds, the two going first in turn, and prints this build's figures as ratios to it.
import pg from 'pg'
import { searchKeyOf } from '../src/core/users/search-key.js'
import { buildDist, measure, row, signIn, startTarget, type Measurement, type Target } from './harness.js'

const databaseUrl = process.env.DATABASE_URL
if (databaseUrl === undefined) {
  console.error('bench/users.ts seeds 100,000 users straight into Postgres: set DATABASE_URL (a database of its own).')
  process.exit(2)
}
const baselineRoot = process.env.BENCH_BASELINE_ROOT
const baselineDatabaseUrl = process.env.BENCH_BASELINE_DATABASE_URL
if ((baselineRoot === undefined) !== (baselineDatabaseUrl === undefined) || (baselineDatabaseUrl !== undefined && baselineDatabaseUrl === databaseUrl)) {
  console.error('BENCH_BASELINE_ROOT needs BENCH_BASELINE_DATABASE_URL, a database other than DATABASE_URL\'s.')
  process.exit(2)
}
buildDist()
const duration = Number(process.env.BENCH_SECONDS ?? 5)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const userCount = Number(process.env.BENCH_USERS ?? 100_000)
console.log(`node ${process.version}`)

const service = await startTarget('service', { DATABASE_URL: databaseUrl })
const baseline = baselineRoot === undefined ? undefined : await startTarget('service', { DATABASE_URL: baselineDatabaseUrl, BENCH_SERVICE_ROOT: baselineRoot })

const FIRST = ['Anna', 'Andrew', 'Anton', 'Amelia', 'Boris', 'Beatrice', 'Carlos', 'Chloe', 'Daniel', 'Dmitri', 'Elena', 'Emil', 'Fatima', 'Felix', 'Grace', 'Hugo',
  'Ingrid', 'Ivan', 'Jana', 'José', 'Kenji', 'Lena', 'Lucas', 'Maria', 'Mohammed', 'Nadia', 'Noah', 'Olga', 'Oscar', 'Priya', 'Quentin', 'Rosa', 'Sofia', 'Stefan',
  'Tomás', 'Ursula', 'Victor', 'Wei', 'Xenia', 'Yusuf', 'Zoë']
const LAST = ['Andersson', 'Brown', 'Chen', 'Dubois', 'Ekström', 'Fischer', 'García', 'Hansen', 'Ivanova', 'Jensen', 'Kowalski', 'López', 'Müller', 'Nakamura',
  'Okafor', 'Petrov', 'Quinn', 'Rossi', 'Singh', 'Tanaka', 'Ueda', 'Varga', 'Weber', 'Xu', 'Yilmaz', 'Zhang']
const seedTag = Date.now().toString(36)

/** Seeds the users into one target's database (with their search keys where its schema has them). */
async function seed (url: string): Promise<pg.Client> {
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  const keyed = (await admin.query("select 1 from information_schema.columns where table_name = 'users' and column_name = 'search_key'")).rowCount === 1
  const seeded = Date.now()
  for (let from = 1; from <= userCount; from += 10_000) {
    const ids: string[] = []
    const emails: string[] = []
    const names: string[] = []
    for (let g = from; g < Math.min(from + 10_000, userCount + 1); g++) {
      ids.push(`user_bench_${seedTag}_${g}`)
      emails.push(`person-${seedTag}-${g}@example.test`)
      names.push(`${FIRST[g % FIRST.length]!} ${LAST[Math.floor(g / FIRST.length) % LAST.length]!} ${g}`)
    }
    await (keyed
      ? admin.query('insert into users (id, email, display_name, search_key, created_at, updated_at) select id, email, name, key, now(), now() from unnest($1::text[], $2::text[], $3::text[], $4::text[]) as u(id, email, name, key)', [ids, emails, names, names.map(searchKeyOf)])
      : admin.query('insert into users (id, email, display_name, created_at, updated_at) select id, email, name, now(), now() from unnest($1::text[], $2::text[], $3::text[]) as u(id, email, name)', [ids, emails, names]))
  }
  // As autovacuum would after a bulk load: statistics, and the visibility map that lets a count read the index alone.
  await admin.query('vacuum analyze users')
  const total = (await admin.query<{ n: number }>('select count(*)::int as n from users')).rows[0]?.n ?? 0
  console.log(`seeded ${userCount} users${keyed ? ' with search keys' : ''} in ${((Date.now() - seeded) / 1000).toFixed(1)} s (${total} in the table)`)
  return admin
}

const admin = await seed(databaseUrl)
if (baselineDatabaseUrl !== undefined) await (await seed(baselineDatabaseUrl)).end()
const targets: Array<[string, Target, string]> = [['', service, await signIn(service, `users-bench-${Date.now()}@example.test`)]]
if (baseline !== undefined) targets.push(['baseline: ', baseline, await signIn(baseline, `users-bench-${Date.now()}@example.test`)])

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
  where search_key collate "C" like ($1 collate "C")
  order by search_key collate "C", id limit $2 offset $3`, ['an%', 20, 0])
console.log('\nplan of a search page (q=An):')
for (const line of plan.rows) console.log(`  ${line['QUERY PLAN']}`)
const countPlan = await admin.query<{ 'QUERY PLAN': string }>(`explain (analyze, costs off)
  select count(*)::int as total from (select 1 from users where search_key collate "C" like ($1 collate "C") order by search_key collate "C" limit 1000) reachable`, ['an%'])
console.log('plan of its total (only when the first page is full):')
for (const line of countPlan.rows) console.log(`  ${line['QUERY PLAN']}`)
await admin.end()

const json = { 'content-type': 'application/json' }
const scenariosOf = (target: Target, token: string): Array<[string, Parameters<typeof measure>[0]]> => {
  const cookie = { cookie: `app_session=${token}` }
  return [
    ['GET /api/auth/me (baseline)', { url: `${target.url}/api/auth/me`, headers: cookie }],
    ['GET /api/users?q=<2–4 letters>', { url: target.url, headers: cookie, requests: [{ setupRequest: (request) => ({ ...request, path: searchPath() }) }] }],
    ['GET /api/users?q=<exact address>', { url: target.url, headers: cookie, requests: [{ setupRequest: (request) => ({ ...request, path: addressPath() }) }] }],
    ['RPC GetDisplayInfo (100 ids)', { url: `${target.url}/rpc/app.users.v1.UsersService/GetDisplayInfo`, method: 'POST', headers: { ...json, authorization: `Bearer ${token}` }, body: JSON.stringify({ userIds: ids }) }]
  ]
}
const names = scenariosOf(service, '').map(([name]) => name)
const results = new Map<string, Measurement[]>(targets.flatMap(([label]) => names.map((name) => [`${label}${name}`, []])))
for (let round = 1; round <= rounds; round++) {
  console.log(`round ${round} of ${rounds}`)
  // With a baseline, the two builds go first in turn (the second of a pair tends to measure cheaper).
  const order = round % 2 === 0 ? [...targets].reverse() : targets
  for (const index of names.keys()) {
    for (const [label, target, token] of order) {
      const [name, options] = scenariosOf(target, token)[index]!
      results.get(`${label}${name}`)?.push(await measure({ duration, ...options }))
    }
  }
}
await service.stop()
await baseline?.stop()
// The baseline's seeded ids are the same, in its own database; GetDisplayInfo asks for the same ones.

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN
console.log(`\nPostgres, ${userCount} users, ${rounds} rounds of ${duration} s per scenario, 50 connections (median round)`)
for (const [label] of targets) {
  for (const name of names) {
    const all = results.get(`${label}${name}`) ?? []
    const typical = all.find((m) => m.rps === median(all.map((x) => x.rps))) ?? all[0]
    if (typical !== undefined) console.log(row(`${label}${name}`, typical))
  }
}
const p99 = (name: string): number => median((results.get(name) ?? []).map((m) => m.p99))
console.log(`\nsearch p99: ${p99('GET /api/users?q=<2–4 letters>')} ms (goal ≤ 20 ms); exact address p99: ${p99('GET /api/users?q=<exact address>')} ms`)
console.log(`GetDisplayInfo of 100 ids p99: ${p99('RPC GetDisplayInfo (100 ids)')} ms`)
if (baseline !== undefined) {
  // Medians of same-round ratios: the machine's speed drifts between rounds, less within one.
  console.log('\nthis build / baseline, medians of same-round ratios:')
  for (const name of names) {
    const now = results.get(name) ?? []
    const then = results.get(`baseline: ${name}`) ?? []
    const rps = median(now.map((m, i) => m.rps / (then[i]?.rps ?? NaN)))
    const tail = median(now.map((m, i) => m.p99 / (then[i]?.p99 ?? NaN)))
    console.log(`  ${name.padEnd(36)} req/s ${rps.toFixed(2)}×   p99 ${tail.toFixed(2)}×`)
  }
}
