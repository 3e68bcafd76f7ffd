// `npx tsx bench/idempotency.ts` (issue 33): a create with an Idempotency-Key against the same create
// without one (goal ≥ 0.85×): `POST /api/rooms`, each keyed request with a fresh key (so each claims,
// runs and stores its answer: two more statements than the plain create), and for scale a replay
// (one key for every request: a claim that finds the stored answer). Interleaved rounds, median of
// per-round ratios, 10 connections. BENCH_ROUNDS (3), BENCH_SECONDS (5); DATABASE_URL selects Postgres.
import { randomUUID } from 'node:crypto'
import { buildDist, measure, row, signIn, startTarget, type Measurement } from './harness.js'

buildDist()
const duration = Number(process.env.BENCH_SECONDS ?? 5)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const service = await startTarget('service')
const token = await signIn(service, `idempotency-bench-${Date.now()}@example.test`)
const headers = { cookie: `app_session=${token}`, 'content-type': 'application/json' }
const body = JSON.stringify({ name: 'bench room' })
const replayKey = randomUUID()
/** PGlite runs one query at a time: 10 connections keep it busy (BENCH_CONNECTIONS to change). */
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10)

const scenarios: Array<[string, Parameters<typeof measure>[0]]> = [
  ['POST /api/rooms', { url: `${service.url}/api/rooms`, method: 'POST', headers, body }],
  ['POST /api/rooms, a new key each', {
    url: `${service.url}/api/rooms`,
    requests: [{ method: 'POST', headers, body, setupRequest: (request) => ({ ...request, headers: { ...request.headers, 'idempotency-key': randomUUID() } }) }]
  }],
  ['POST /api/rooms, one key (replays)', { url: `${service.url}/api/rooms`, method: 'POST', headers: { ...headers, 'idempotency-key': replayKey }, body }]
]
const results = new Map<string, Measurement[]>(scenarios.map(([name]) => [name, []]))
for (let round = 1; round <= rounds; round++) {
  console.log(`round ${round} of ${rounds}`)
  for (const [name, options] of scenarios) results.get(name)?.push(await measure({ duration, connections, ...options }))
}
await service.stop()

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN
const of = (name: string): Measurement[] => results.get(name) ?? []
const ratio = (a: string, b: string): number => median(of(a).map((m, i) => m.rps / (of(b)[i]?.rps ?? NaN)))
console.log(`\n${process.env.DATABASE_URL === undefined ? 'PGlite' : 'Postgres'}, ${rounds} rounds of ${duration} s per scenario, ${connections} connections (median round's req/s and p99)`)
for (const [name] of scenarios) {
  const all = of(name)
  const typical = all.find((m) => m.rps === median(all.map((x) => x.rps))) ?? all[0]
  if (typical !== undefined) console.log(row(name, typical, name === 'POST /api/rooms' ? undefined : ratio(name, 'POST /api/rooms')))
}
console.log(`\ncreate with a new key / without: ${ratio('POST /api/rooms, a new key each', 'POST /api/rooms').toFixed(2)}× (goal ≥ 0.85)`)
