// `npx tsx bench/validate.ts`: ValidateLayout of a room at its tile limit with every tile on one
// spot (issue 37, item 2; DECISIONS §17): 1,000 tiles, 499,500 overlapping pairs. Prints what the
// computation alone takes (the bounded findings, in this process, warm), then the whole request
// through the service built from `dist/` in this process: REST and RPC (Connect JSON) over HTTP,
// alternating, after 3 warm-up calls each, the median and p99 of BENCH_RUNS calls each, with the
// size of each answer and of the `layout:validated` event on a member's stream.
// Goal: ≤ 100 ms per validation (median), answer and event ≤ 64 KB, counts exact.
// Options: BENCH_TILES (1000), BENCH_RUNS (30); DATABASE_URL / REDIS_URL select Postgres / Redis.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { performance } from 'node:perf_hooks'
import { BENCH_JWT_SECRET, UNLIMITED_TIERS, buildDist, builtModule, importBuilt, signInInProcess } from './harness.js'
import { newId } from '../src/infra/ids.js'

const tiles = Number(process.env.BENCH_TILES ?? 1000)
const runs = Number(process.env.BENCH_RUNS ?? 30)
const GOAL_MS = 100
const GOAL_BYTES = 64 * 1024

function percentile (values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * p / 100) - 1)] ?? NaN
}

buildDist()
const root = join(import.meta.dirname, '..')
const { layoutFindings } = await import(pathToFileURL(builtModule(root, 'core/canvas/layout-issues.js')).href) as typeof import('../src/core/canvas/layout-issues.js')

// The computation alone: what validation holds the event loop for, outside any transaction.
const stacked = Array.from({ length: tiles }, (_, i) => ({ tileId: `spark_bench_${i.toString(36).padStart(4, '0')}`, x: 0, y: 0 }))
layoutFindings(stacked)
const computeMs: number[] = []
let findings = layoutFindings(stacked)
for (let i = 0; i < runs; i++) {
  const started = performance.now()
  findings = layoutFindings(stacked)
  computeMs.push(performance.now() - started)
}

const { buildApp, loadConfig } = await importBuilt()
const dataDir = mkdtempSync(join(tmpdir(), 'canvas-bench-'))
const config = loadConfig({ ...process.env, NODE_ENV: 'production', JWT_SECRET: BENCH_JWT_SECRET, DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent' })
const app = await buildApp(config, { rateLimit: { maxOverride: UNLIMITED_TIERS } })
const url = await app.listen({ port: 0, host: '127.0.0.1' })

// Sign-in through the mailed link, then one public room filled to the limit in one statement,
// every tile at (0, 0).
const { cookie, userId } = await signInInProcess(app, dataDir, 'validate-bench@example.test')
const roomId = (await app.inject({ method: 'POST', url: '/api/rooms', cookies: { app_session: cookie }, payload: { name: 'validate bench', isPublic: true } })).json().data.id as string
const now = new Date()
await app.deps.db.insertInto('sparks').values(Array.from({ length: tiles }, (_, k) => ({
  id: newId('spark'), room_id: roomId, title: `tile ${k}`, content: '', x: 0, y: 0, created_by: userId, created_at: now, updated_at: now
}))).execute()

// The events as a member's stream carries them: every `layout:validated` message's data, in bytes.
const eventSizes: number[] = []
const stream = new AbortController()
const subscribed = await fetch(`${url}/api/sync/subscribe`, { headers: { accept: 'text/event-stream', cookie: `app_session=${cookie}` }, signal: stream.signal })
const reading = (async () => {
  let buffered = ''
  try {
    for await (const chunk of subscribed.body ?? []) {
      buffered += Buffer.from(chunk as Uint8Array).toString()
      const messages = buffered.split('\n\n')
      buffered = messages.pop() ?? ''
      for (const message of messages) {
        const data = message.split('\n').filter((line) => line.startsWith('data:')).map((line) => line.slice(5).trimStart()).join('\n')
        if (data.includes('"type":"layout:validated"')) eventSizes.push(Buffer.byteLength(data))
      }
    }
  } catch {} // aborted at the end
})()

const WARM_UP = 3
interface Series { ms: number[], bytes: number, issueCount: number }

/** One call, timed; its answer's size and issueCount (REST inside `data`). */
async function timed (into: Series, warm: boolean, send: () => Promise<Response>): Promise<void> {
  const started = performance.now()
  const res = await send()
  const body = Buffer.from(await res.arrayBuffer())
  if (res.status !== 200) throw new Error(`${res.status} ${body.toString()}`)
  if (!warm) into.ms.push(performance.now() - started)
  into.bytes = body.length
  const parsed = JSON.parse(body.toString()) as { data?: { issueCount: number }, issueCount?: number }
  into.issueCount = parsed.data?.issueCount ?? parsed.issueCount ?? NaN
}

// REST and RPC alternate, so drift in the machine's speed reaches both alike; the first calls warm up.
const rest: Series = { ms: [], bytes: 0, issueCount: NaN }
const rpc: Series = { ms: [], bytes: 0, issueCount: NaN }
for (let i = 0; i < WARM_UP + runs; i++) {
  await timed(rest, i < WARM_UP, async () => await fetch(`${url}/api/canvas/layout/validate`, {
    method: 'POST', headers: { 'content-type': 'application/json', cookie: `app_session=${cookie}` }, body: JSON.stringify({ roomId })
  }))
  // The session token is a Bearer token for RPC too (bench/run.ts does the same).
  await timed(rpc, i < WARM_UP, async () => await fetch(`${url}/rpc/app.canvas.v1.CanvasService/ValidateLayout`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${cookie}` }, body: JSON.stringify({ roomId })
  }))
}
for (let waited = 0; eventSizes.length < 2 * (WARM_UP + runs) && waited < 10_000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50))
stream.abort()
await reading
await app.close()
const eventBytes = Math.max(0, ...eventSizes)

const fmt = (ms: number): string => `${ms.toFixed(1)} ms`
const expected = tiles * (tiles - 1) / 2
console.log(`database: ${process.env.DATABASE_URL === undefined ? 'PGlite (embedded)' : 'Postgres'}; ${tiles} tiles on one spot (${expected} overlapping pairs); ${runs} runs each`)
console.log(`findings alone (in process): median ${fmt(percentile(computeMs, 50))}, p99 ${fmt(percentile(computeMs, 99))}; ${findings.issues.length} issues listed of ${findings.issueCount}`)
for (const [name, r] of [['REST POST /api/canvas/layout/validate', rest], ['RPC ValidateLayout (Connect JSON)', rpc]] as const) {
  console.log(`${name.padEnd(40)} median ${fmt(percentile(r.ms, 50))}, p99 ${fmt(percentile(r.ms, 99))}; answer ${r.bytes} bytes; issueCount ${r.issueCount}`)
}
console.log(`layout:validated event on a member's stream: ${eventBytes} bytes of data (${eventSizes.length} of ${2 * (WARM_UP + runs)} events arrived)`)
const worst = Math.max(percentile(rest.ms, 50), percentile(rpc.ms, 50))
const ok = worst <= GOAL_MS && Math.max(rest.bytes, rpc.bytes, eventBytes) <= GOAL_BYTES && eventSizes.length === 2 * (WARM_UP + runs) && rest.issueCount === expected && rpc.issueCount === expected
console.log(`${ok ? 'met' : 'MISSED'}: validation median ${fmt(worst)} (goal ≤ ${GOAL_MS} ms), largest answer or event ${Math.max(rest.bytes, rpc.bytes, eventBytes)} bytes (goal ≤ ${GOAL_BYTES}), counts exact: ${rest.issueCount === expected && rpc.issueCount === expected}`)
process.exitCode = ok ? 0 : 1
