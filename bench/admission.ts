// `npx tsx bench/admission.ts` (issue 18): the admission path with many callers. `GET /api/auth/me`
// with a session cookie, cycling over 1,000 distinct signed-in users, against raw node:http answering
// the same requests (same cookies, so the load generator does the same work for both) in the same
// run; and the single-user case for comparison. On Postgres + Redis: set DATABASE_URL (a database of
// its own: it signs thousands of users up there) and REDIS_URL, e.g.
//   createdb -h 127.0.0.1 -U postgres bench_admit
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_admit REDIS_URL=redis://127.0.0.1:6379/9 npx tsx bench/admission.ts
//   dropdb -h 127.0.0.1 -U postgres bench_admit
//
// The many-user service runs with SPEC's real tiers (`read`: 300 a minute per user): each round and
// each many-user scenario has its own group of users, signed in beforehand through the service's own
// sign-in flow (magic link requested and redeemed by the core, from dist/, the link read from the
// outbox), so no user is asked for more than a round's share — printed, with every 429 counted (there
// must be none). Each connection cycles over all the users from its own starting point, so requests
// in flight at once are for different users; the `lockstep` scenario hands every connection the same
// list instead (all start at the first user and stay together, as a naive load generator does: every
// user is asked for by every connection at once). The single-user service has its tiers raised
// (bench/serve.ts), as in `npm run bench`. Targets run in their own processes, all at once; each
// round measures raw, many users, lockstep, one user back to back; ratios are medians of same-round
// ratios. Each target's CPU time per request is read from /proc around each measured run: unlike
// req/s it barely moves when other work shares the machine. A run lasts longer than the session
// cache's 10 s (src/core/auth/session-cache.ts), so every user's entry is renewed at least once.
// BENCH_ROUNDS (3), BENCH_SECONDS (10), BENCH_USERS (1000), BENCH_CONNECTIONS (50),
// BENCH_SCENARIOS (a comma list of many, lockstep, single; all by default: `many` alone to profile
// it with BENCH_NODE_ARGS='--cpu-prof --cpu-prof-dir=prof'), BENCH_BASELINE_ROOT (another checkout,
// built, e.g. of the main branch, measured on the same users in the same rounds: before and after).
import { readFileSync } from 'node:fs'
import autocannon from 'autocannon'
import { buildDist, seedUsers, spreadOver, startTarget, type Target } from './harness.js'

const databaseUrl = process.env.DATABASE_URL
if (databaseUrl === undefined || process.env.REDIS_URL === undefined) {
  console.error('bench/admission.ts measures on Postgres + Redis: set DATABASE_URL (a database of its own) and REDIS_URL.')
  process.exit(2)
}
buildDist()
const duration = Number(process.env.BENCH_SECONDS ?? 10)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const users = Number(process.env.BENCH_USERS ?? 1000)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50)
const scenarios = new Set((process.env.BENCH_SCENARIOS ?? 'many,lockstep,single').split(',').map((s) => s.trim()))
/** SPEC's `read` tier, which `GET /api/auth/me` is in (src/core/operations.ts, src/ratelimit/tiers.ts). */
const READ_PER_MINUTE = 300
const WARM_UP_SECONDS = 1

const median = (values: number[]): number => {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? NaN
}

/** User + system CPU time of a process so far, in microseconds (Linux /proc; NaN elsewhere). */
function cpuUsOf (pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${String(pid)}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
    // After the command name: state is field 3, utime field 14, stime field 15 (clock ticks of 10 ms).
    return (Number(fields[11]) + Number(fields[12])) * 10_000
  } catch {
    return NaN
  }
}

interface Measurement { rps: number, p99: number, requests: number, non2xx: number, tooMany: number, errors: number, cpuUsPerRequest: number }

type Requests = NonNullable<autocannon.Options['requests']>

/**
 * One scenario: a 1 s unmeasured warm-up, then the measured run; 429s of both are counted. `lockstep`
 * hands every connection the same list (each starts at the first user), as a naive generator would.
 */
async function measure (target: Target, requests: Requests, pid?: number, lockstep = false): Promise<Measurement> {
  const options: autocannon.Options = { url: target.url, connections, ...(lockstep ? { requests } : spreadOver(requests, connections)) }
  const warm = await autocannon({ ...options, duration: WARM_UP_SECONDS })
  const cpuBefore = cpuUsOf(pid)
  const result = await autocannon({ ...options, duration })
  const cpu = cpuUsOf(pid) - cpuBefore
  const tooMany = (r: autocannon.Result): number => (r.statusCodeStats as Record<string, { count: number } | undefined>)['429']?.count ?? 0
  return {
    rps: result.requests.average,
    p99: result.latency.p99,
    requests: result.requests.total + warm.requests.total,
    non2xx: result.non2xx + warm.non2xx,
    tooMany: tooMany(result) + tooMany(warm),
    errors: result.errors + warm.errors,
    cpuUsPerRequest: cpu / result.requests.total
  }
}

const meRequests = (tokens: string[]): Requests => tokens.map((token) => ({ method: 'GET', path: '/api/auth/me', headers: { cookie: `app_session=${token}` } }))

const raw = await startTarget('raw')
const usesMany = scenarios.has('many') || scenarios.has('lockstep')
// BENCH_BASELINE_ROOT: another checkout (its `dist/` built, its node_modules) serving the same users
// in the same rounds, under its own counter prefix — before and after a change, side by side. It
// starts first: an older build refuses a database that holds migrations it does not know, so this
// build's new ones are applied after it has migrated.
const baselineRoot = process.env.BENCH_BASELINE_ROOT
const before = usesMany && baselineRoot !== undefined
  ? await startTarget('service', { BENCH_TIERS: 'real', BENCH_SERVICE_ROOT: baselineRoot, RATE_LIMIT_KEY_PREFIX: `bench-baseline-${Date.now()}:` })
  : undefined
const many = usesMany ? await startTarget('service', { BENCH_TIERS: 'real' }) : undefined
const single = scenarios.has('single') ? await startTarget('service') : undefined
console.log(`targets: raw pid ${String(raw.child.pid)}, many users pid ${String(many?.child.pid)} (SPEC tiers), single user pid ${String(single?.child.pid)} (tiers raised)`)

const started = Date.now()
const label = started.toString(36)
/** Each round's own users, for each many-user scenario: nobody is counted in two rounds' windows. */
const groups = { many: [] as string[][], lockstep: [] as string[][] }
for (const scenario of ['many', 'lockstep'] as const) {
  if (!scenarios.has(scenario)) continue
  for (let round = 1; round <= rounds; round++) groups[scenario].push(await seedUsers(users, `${label}-${scenario}-r${round}`))
}
const [singleToken] = await seedUsers(1, `${label}-single`)
console.log(`seeded ${groups.many.length + groups.lockstep.length} × ${users} users and 1 more through the sign-in flow in ${((Date.now() - started) / 1000).toFixed(1)} s`)

// A user answers as itself (the cookie is not just any valid one). Checked on two users of the
// first group: that they are then cached is the same for every scenario (warm-up caches them all).
for (const target of [many, single]) {
  if (target === undefined) continue
  const group = groups.many[0] ?? groups.lockstep[0]
  const checks: Array<[string, string]> = target === single
    ? [[singleToken!, `admission-${label}-single-0@example.test`]]
    : [0, users - 1].map((i) => [group![i]!, `admission-${label}-${groups.many.length > 0 ? 'many' : 'lockstep'}-r1-${i}@example.test`])
  for (const [token, email] of checks) {
    const res = await fetch(`${target.url}/api/auth/me`, { headers: { cookie: `app_session=${token}` } })
    const body = await res.json() as { data?: { email?: string } }
    if (res.status !== 200 || body.data?.email !== email) throw new Error(`GET /api/auth/me answered ${res.status} ${JSON.stringify(body)}, expected ${email}`)
  }
}

const results = { raw: [] as Measurement[], many: [] as Measurement[], lockstep: [] as Measurement[], single: [] as Measurement[], beforeMany: [] as Measurement[], beforeLockstep: [] as Measurement[] }
for (let round = 1; round <= rounds; round++) {
  console.log(`round ${round} of ${rounds}`)
  // The raw baseline answers the same requests as the service in this round.
  results.raw.push(await measure(raw, meRequests(groups.many[round - 1] ?? groups.lockstep[round - 1] ?? [singleToken!]), raw.child.pid))
  // With a baseline build, the two go first in turn: the second of a pair measured ~12 % less CPU
  // per request even when both were this build (an A/A run), so a fixed order would bias the pair.
  const pairs: Array<[Target | undefined, Measurement[], Measurement[], 'many' | 'lockstep']> = [
    [many, results.many, results.beforeMany, 'many'], [many, results.lockstep, results.beforeLockstep, 'lockstep']
  ]
  for (const [target, now, then, scenario] of pairs) {
    if (target === undefined || !scenarios.has(scenario)) continue
    const requests = meRequests(groups[scenario][round - 1]!)
    const lockstep = scenario === 'lockstep'
    const order: Array<[Target, Measurement[]]> = [[target, now]]
    if (before !== undefined) order[round % 2 === 0 ? 'unshift' : 'push']([before, then])
    for (const [which, into] of order) into.push(await measure(which, requests, which.child.pid, lockstep))
  }
  if (single !== undefined) results.single.push(await measure(single, meRequests([singleToken!]), single.child.pid))
}
await Promise.all([raw.stop(), many?.stop(), before?.stop(), single?.stop()])

const typical = (all: Measurement[]): Measurement | undefined => {
  const rps = median(all.map((m) => m.rps))
  return all.find((m) => m.rps === rps) ?? all[0]
}
const ratios = (all: Measurement[]): number[] => all.map((m, i) => m.rps / (results.raw[i]?.rps ?? NaN))
const line = (name: string, all: Measurement[]): string => {
  const m = typical(all)
  if (m === undefined) return `${name.padEnd(50)} (not run)`
  const cpu = Number.isNaN(m.cpuUsPerRequest) ? '' : `   CPU ${m.cpuUsPerRequest.toFixed(0).padStart(3)} µs/req (median ${median(all.map((r) => r.cpuUsPerRequest)).toFixed(0)})`
  const bad = all.some((r) => r.errors + r.non2xx > 0) ? `   (over all rounds: errors ${all.reduce((s, r) => s + r.errors, 0)}, non-2xx ${all.reduce((s, r) => s + r.non2xx, 0)})` : ''
  return `${name.padEnd(50)} ${m.rps.toFixed(0).padStart(7)} req/s   p99 ${String(m.p99).padStart(3)} ms${cpu}${bad}`
}

console.log(`\nnode ${process.version}, Postgres + Redis, ${rounds} rounds of ${duration} s (after ${WARM_UP_SECONDS} s warm-up), ${connections} connections, median round shown; CPU: the target process's user + system time per answered request`)
console.log(line('raw node:http (same requests)', results.raw))
console.log(line(`GET /api/auth/me, ${users} users (SPEC tiers)`, results.many))
console.log(line('  the same, connections in lockstep', results.lockstep))
console.log(line('GET /api/auth/me, 1 user (tiers raised)', results.single))
if (before !== undefined) {
  console.log(line(`baseline build: ${users} users`, results.beforeMany))
  console.log(line('baseline build: lockstep', results.beforeLockstep))
}
console.log('')
for (const [scenario, all] of [['many', results.many], ['lockstep', results.lockstep]] as const) {
  if (all.length === 0) continue
  const perUser = Math.max(...all.map((m) => Math.ceil(m.requests / users)))
  const tooMany = all.reduce((s, m) => s + m.tooMany, 0)
  console.log(`${`${users} users${scenario === 'lockstep' ? ', lockstep,' : ''} / raw:`.padEnd(30)} ${median(ratios(all)).toFixed(2)}×${scenario === 'many' ? ' (goal ≥ 0.5)' : ''}   per round: ${ratios(all).map((r) => r.toFixed(2)).join(', ')}`)
  console.log(`  requests per user in a round (warm-up included): at most about ${perUser} of the read tier's ${READ_PER_MINUTE} a minute; 429s: ${tooMany}${tooMany > 0 ? '  <-- the run is invalid' : ''}`)
}
if (before !== undefined) {
  for (const [name, now, then] of [['many', results.many, results.beforeMany], ['lockstep', results.lockstep, results.beforeLockstep]] as const) {
    if (now.length === 0) continue
    const same = now.map((m, i) => m.rps / (then[i]?.rps ?? NaN))
    console.log(`${`${name}: this build / baseline:`.padEnd(30)} ${median(same).toFixed(2)}× req/s (per round ${same.map((r) => r.toFixed(2)).join(', ')}), CPU per request ${median(now.map((m) => m.cpuUsPerRequest)).toFixed(0)} / ${median(then.map((m) => m.cpuUsPerRequest)).toFixed(0)} µs; baseline / raw ${median(then.map((m, i) => m.rps / (results.raw[i]?.rps ?? NaN))).toFixed(2)}×; baseline 429s: ${then.reduce((s, m) => s + m.tooMany, 0)}`)
  }
}
if (single !== undefined) console.log(`${'1 user / raw:'.padEnd(30)} ${median(ratios(results.single)).toFixed(2)}×   per round: ${ratios(results.single).map((r) => r.toFixed(2)).join(', ')}`)
