// `npx tsx bench/layout-load.ts`: how responsive the service stays while force-directed layouts of
// full rooms (1,000 tiles) run in its worker pool (issue 17, item 5). The service is built from
// dist/ in this process, so its event loop is the one measured (monitorEventLoopDelay); a child
// process (this file with `client`) sends GET /health at a steady rate and, in the load phase, the
// layouts, all at once, over HTTP. Each round runs a baseline phase (health only, BENCH_SECONDS) and
// right after it a load phase (until every layout is answered). Goal: event-loop delay p99 < 50 ms
// during the load; /health p99 is shown against the baseline's.
// Options: BENCH_ROUNDS (3), BENCH_SECONDS (3), BENCH_LAYOUTS (5), BENCH_HEALTH_RATE (100 requests/s);
// DATABASE_URL / REDIS_URL select Postgres / Redis; COMPUTE_THREADS / COMPUTE_QUEUE size the pool.
import { fork } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import { UNLIMITED_TIERS, buildDist, builtModule, importBuilt, reapOnExit, signInInProcess } from './harness.js'
import { newId } from '../src/infra/ids.js'

const TILES = 1000

/** What the parent asks the client for: health requests for a while, or while layouts run. */
type ClientCommand = { phase: 'baseline', url: string, ms: number, rate: number } | { phase: 'load', url: string, rate: number, cookie: string, roomIds: string[] }
interface ClientReport { health: number[], failures: number, layouts: Array<{ status: number, ms: number }> }

if (process.argv[2] === 'client') {
  process.on('message', (command: ClientCommand) => { void runPhase(command).then((report) => process.send?.(report)) })
} else {
  await main()
}

/** GET /health every 1/rate s (not waiting for answers, so a stall shows as latency) for the baseline time, or until every layout is answered. */
async function runPhase (command: ClientCommand): Promise<ClientReport> {
  const health: number[] = []
  let failures = 0
  const pending = new Set<Promise<void>>()
  const timer = setInterval(() => {
    const sent = performance.now()
    const request = fetch(`${command.url}/health`)
      .then(async (res) => { await res.arrayBuffer(); if (res.ok) health.push(performance.now() - sent); else failures++ })
      .catch(() => { failures++ })
      .finally(() => { pending.delete(request) })
    pending.add(request)
  }, 1000 / command.rate)
  let layouts: ClientReport['layouts'] = []
  if (command.phase === 'baseline') {
    await new Promise((resolve) => setTimeout(resolve, command.ms))
  } else {
    const started = performance.now()
    layouts = await Promise.all(command.roomIds.map(async (roomId) => {
      const res = await fetch(`${command.url}/api/canvas/layout/compute`, {
        method: 'POST', headers: { 'content-type': 'application/json', cookie: `app_session=${command.cookie}` }, body: JSON.stringify({ roomId, algorithm: 'force-directed' })
      })
      await res.arrayBuffer()
      return { status: res.status, ms: performance.now() - started }
    }))
  }
  clearInterval(timer)
  await Promise.all(pending)
  return { health, failures, layouts }
}

function percentile (values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * p / 100) - 1)] ?? NaN
}

function median (values: readonly number[]): number {
  return percentile(values, 50)
}

async function main (): Promise<void> {
  buildDist()
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
  const baselineMs = Number(process.env.BENCH_SECONDS ?? 3) * 1000
  const layoutCount = Number(process.env.BENCH_LAYOUTS ?? 5)
  const rate = Number(process.env.BENCH_HEALTH_RATE ?? 100)
  const { buildApp, loadConfig } = await importBuilt()
  const { forceDirectedLayout } = await import(pathToFileURL(builtModule(join(import.meta.dirname, '..'), 'core/canvas/layout.js')).href) as typeof import('../src/core/canvas/layout.js')
  const dataDir = mkdtempSync(join(tmpdir(), 'canvas-bench-'))
  const config = loadConfig({ ...process.env, NODE_ENV: 'production', JWT_SECRET: 'bench-secret-bench-secret-bench-secret-0123', DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent' })
  const app = await buildApp(config, { rateLimit: { maxOverride: UNLIMITED_TIERS } })
  const url = await app.listen({ port: 0, host: '127.0.0.1' })

  // Sign-in through the mailed link, then one room per layout, each filled to the tile limit in one
  // statement (a thousand create requests would only slow the setup down).
  const { cookie, userId } = await signInInProcess(app, dataDir, 'layout-bench@example.test')
  const roomIds: string[] = []
  for (let i = 0; i < layoutCount; i++) {
    const roomId = (await app.inject({ method: 'POST', url: '/api/rooms', cookies: { app_session: cookie }, payload: { name: `layout bench ${i}`, isPublic: false } })).json().data.id as string
    const now = new Date()
    await app.deps.db.insertInto('sparks').values(Array.from({ length: TILES }, (_, k) => ({
      id: newId('spark'), room_id: roomId, title: `tile ${k}`, content: '', x: 0, y: 0, created_by: userId, created_at: now, updated_at: now
    }))).execute()
    roomIds.push(roomId)
  }
  // For scale: what one layout would hold the event loop for if it ran there (warm, fastest of 3).
  const ids = Array.from({ length: TILES }, (_, k) => `spark_scale_${k}`)
  let oneLayoutMs = Infinity
  for (let i = 0; i < 3; i++) {
    const started = performance.now()
    forceDirectedLayout(ids)
    oneLayoutMs = Math.min(oneLayoutMs, performance.now() - started)
  }

  const client = reapOnExit(fork(import.meta.filename, ['client'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }))
  async function phase (command: ClientCommand): Promise<ClientReport & { eld: { p50: number, p99: number, max: number } }> {
    // The histogram records each interval of its 10 ms timer; the delay is what exceeds 10 ms.
    const delay = monitorEventLoopDelay({ resolution: 10 })
    const report = new Promise<ClientReport>((resolve) => client.once('message', resolve))
    delay.enable()
    client.send(command)
    const result = await report
    delay.disable()
    const excess = (ns: number): number => Math.max(0, ns / 1e6 - 10)
    return { ...result, eld: { p50: excess(delay.percentile(50)), p99: excess(delay.percentile(99)), max: excess(delay.max) } }
  }

  const results: Array<{ baseline: Awaited<ReturnType<typeof phase>>, load: Awaited<ReturnType<typeof phase>> }> = []
  for (let round = 1; round <= rounds; round++) {
    const baseline = await phase({ phase: 'baseline', url, ms: baselineMs, rate })
    const load = await phase({ phase: 'load', url, rate, cookie, roomIds })
    results.push({ baseline, load })
    const statuses = load.layouts.map((l) => l.status).join(', ')
    console.log(`round ${round} of ${rounds}: layouts answered ${statuses} after ${Math.max(...load.layouts.map((l) => l.ms)).toFixed(0)} ms`)
  }
  client.kill()
  await app.close()

  const fmt = (ms: number): string => `${ms.toFixed(1)} ms`.padStart(9)
  const line = (name: string, pick: (r: typeof results[number]) => Awaited<ReturnType<typeof phase>>): string => {
    const eldP99 = median(results.map((r) => pick(r).eld.p99))
    return `${name.padEnd(32)} ELD p50 ${fmt(median(results.map((r) => pick(r).eld.p50)))}  p99 ${fmt(eldP99)}  max ${fmt(median(results.map((r) => pick(r).eld.max)))}` +
      `   /health p99 ${fmt(median(results.map((r) => percentile(pick(r).health, 99))))} (${median(results.map((r) => pick(r).health.length))} answers, ${results.reduce((n, r) => n + pick(r).failures, 0)} failed)`
  }
  console.log(`\ndatabase: ${process.env.DATABASE_URL === undefined ? 'PGlite (embedded)' : 'Postgres'}; pool: ${config.computeThreads} thread(s), queue ${config.computeQueue}; ${layoutCount} layouts of ${TILES} tiles at once; /health at ${rate}/s; ${rounds} rounds (medians of rounds shown)`)
  console.log(`one layout on the event loop would block it for ${oneLayoutMs.toFixed(0)} ms (measured here, for scale)`)
  console.log(line('baseline (no layouts)', (r) => r.baseline))
  console.log(line(`while ${layoutCount} layouts run`, (r) => r.load))
  const loadP99 = median(results.map((r) => r.load.eld.p99))
  const ok = loadP99 < 50
  console.log(`per-round ELD p99 under load: ${results.map((r) => r.load.eld.p99.toFixed(1)).join(', ')} ms`)
  console.log(`${ok ? 'met' : 'MISSED'}: event-loop delay p99 ${loadP99.toFixed(1)} ms while layouts run (goal < 50 ms)`)
  process.exitCode = ok ? 0 : 1
}
