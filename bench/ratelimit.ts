// `npx tsx bench/ratelimit.ts`: what the rate limiter costs, measured in one run on one cheap
// authenticated route (GET /api/auth/me with a session cookie, `read` tier):
//   1. no limiter  2. memory store  3. Redis store  4. Redis frozen with SIGSTOP (memory fallback).
// Goals (issue 5): memory ≥ 0.85× no limiter; Redis ≥ 0.8× memory; frozen Redis: p99 < 50 ms, no 5xx.
// Each service runs in its own child process (this file with `serve <mode>`), the load generator
// here; Redis is a redis-server of the bench's own on a free port. Tier limits are raised through a
// build option so that no request is answered by a 429 (a cheaper reply would flatter the limiter).
// Set DATABASE_URL to run on Postgres; BENCH_SECONDS / BENCH_CONNECTIONS / BENCH_ROUNDS to change the load.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { UNLIMITED_TIERS, buildDist, importBuilt, reapOnExit } from './harness.js'

type Mode = 'off' | 'memory' | 'redis'

/** Child: build and start the app for one mode, print `listening <url>`, stop on SIGTERM. */
async function serve (mode: Mode): Promise<void> {
  const { buildApp, loadConfig } = await importBuilt()
  const config = loadConfig({ ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent' })
  const app = await buildApp(config, {
    rateLimit: mode === 'off'
      ? false
      : { maxOverride: UNLIMITED_TIERS }
  })
  console.log(`listening ${await app.listen({ port: 0, host: '127.0.0.1' })}`)
  process.on('SIGTERM', () => { void app.close().then(() => process.exit(0)) })
  // The parent asks for this process's CPU time around each run: CPU per request is what the
  // limiter adds, and unlike req/s it barely moves when other work shares the machine.
  process.on('message', () => { process.send?.(process.cpuUsage()) })
}

interface Service { url: string, dataDir: string, child: ChildProcess }

async function startService (mode: Mode, redisUrl?: string): Promise<Service> {
  const dataDir = mkdtempSync(join(tmpdir(), 'canvas-bench-ratelimit-'))
  const child = reapOnExit(spawn(process.execPath, ['--import=tsx', import.meta.filename, 'serve', mode], {
    env: { ...process.env, NODE_ENV: 'production', JWT_SECRET: 'bench-secret-bench-secret-bench-secret-0123', DATA_DIR: dataDir, REDIS_URL: redisUrl },
    stdio: ['ignore', 'pipe', 'inherit', 'ipc']
  }))
  const url = await new Promise<string>((resolve, reject) => {
    let out = ''
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const match = /listening (\S+)/.exec(out)
      if (match?.[1] !== undefined) resolve(match[1])
    })
    child.once('exit', (code) => { reject(new Error(`service (${mode}) exited with ${String(code)}`)) })
  })
  return { url, dataDir, child }
}

async function stopService (service: Service): Promise<void> {
  const exited = new Promise((resolve) => service.child.once('exit', resolve))
  service.child.kill('SIGTERM')
  await exited
}

/** Magic-link sign-in through the REST API, the link read from the service's outbox. */
async function signIn (service: Service): Promise<string> {
  const email = 'bench-ratelimit@example.test'
  const requested = await fetch(`${service.url}/api/auth/request-login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email }) })
  if (!requested.ok) throw new Error(`request-login: ${requested.status}`)
  const outbox = join(service.dataDir, 'outbox')
  const mail = readdirSync(outbox).map((f) => JSON.parse(readFileSync(join(outbox, f), 'utf8')) as { to: string, text: string }).find((m) => m.to === email)
  const token = /token=([A-Za-z0-9_-]+)/.exec(mail?.text ?? '')?.[1] ?? ''
  const authorized = await fetch(`${service.url}/api/auth/authorize?token=${token}`, { redirect: 'manual' })
  const cookie = /app_session=([^;]+)/.exec(authorized.headers.get('set-cookie') ?? '')?.[1]
  if (cookie === undefined) throw new Error(`authorize: ${authorized.status}`)
  return cookie
}

interface Measurement {
  rps: number
  p99: number
  requests: number
  /** Service process CPU time (user + system) per answered request, in microseconds. */
  cpuUs: number
  non2xx: number
  fiveXx: number
  errors: number
}

async function cpuOf (service: Service): Promise<number> {
  return await new Promise((resolve) => {
    service.child.once('message', (usage) => {
      const { user, system } = usage as NodeJS.CpuUsage
      resolve(user + system)
    })
    service.child.send('cpu')
  })
}

const seconds = Number(process.env.BENCH_SECONDS ?? 5)
// 50 connections, as in every other scenario of bench/ (`/me` reads no database: its session is
// cached). Redis work is per batch of counts, and fewer connections make smaller batches:
// BENCH_CONNECTIONS=10 shows what the Redis store costs a lightly loaded instance.
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50)
const roundCount = Number(process.env.BENCH_ROUNDS ?? 3)

async function load (service: Service, cookie: string, duration: number): Promise<Measurement> {
  const cpuBefore = await cpuOf(service)
  const result = await autocannon({ url: `${service.url}/api/auth/me`, headers: { cookie: `app_session=${cookie}` }, connections, duration })
  const cpuUs = (await cpuOf(service) - cpuBefore) / Math.max(1, result.requests.total)
  return { rps: result.requests.average, p99: result.latency.p99, requests: result.requests.total, cpuUs, non2xx: result.non2xx, fiveXx: result['5xx'], errors: result.errors + result.timeouts }
}

async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => { resolve(typeof address === 'object' && address !== null ? address.port : 0) })
    })
  })
}

async function startRedis (): Promise<{ url: string, child: ChildProcess }> {
  const port = await freePort()
  const child = reapOnExit(spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'inherit'] }))
  await new Promise<void>((resolve, reject) => {
    let out = ''
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      if (out.includes('Ready to accept connections')) resolve()
    })
    child.once('exit', (code) => { reject(new Error(`redis-server exited with ${String(code)}`)) })
  })
  child.stdout?.resume()
  return { url: `redis://127.0.0.1:${port}`, child }
}

function row (name: string, m: Measurement): string {
  const extra = m.non2xx + m.errors > 0 ? `  non-2xx ${m.non2xx} (5xx ${m.fiveXx}), errors ${m.errors}` : ''
  return `${name.padEnd(34)} ${m.rps.toFixed(0).padStart(7)} req/s   p99 ${String(m.p99).padStart(4)} ms   ${m.cpuUs.toFixed(0).padStart(4)} µs CPU/request   ${String(m.requests).padStart(7)} requests${extra}`
}

function goal (text: string, met: boolean): string {
  return `  ${met ? 'met   ' : 'MISSED'}  ${text}`
}

function median (values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y)
  return sorted[Math.floor(sorted.length / 2)]!
}

/** The round whose req/s is the median of the mode's rounds (its p99 and counts come with it). */
function medianRound (rounds: Measurement[]): Measurement {
  const rps = median(rounds.map((m) => m.rps))
  return rounds.find((m) => m.rps === rps)!
}

async function main (): Promise<void> {
  buildDist()
  const redis = await startRedis()
  const modes = ['off', 'memory', 'redis'] as const
  const services = new Map<Mode, Service>()
  const cookies = new Map<Mode, string>()
  const rounds = new Map<Mode, Measurement[]>(modes.map((mode) => [mode, []]))
  let paused: Measurement
  try {
    // All three run at once (an idle one costs nothing) and are measured in turns, rotating the
    // order each round, so machine noise and drift fall on every mode alike.
    for (const mode of modes) {
      const service = await startService(mode, mode === 'redis' ? redis.url : undefined)
      services.set(mode, service)
      cookies.set(mode, await signIn(service))
      await load(service, cookies.get(mode)!, 2) // warm-up: JIT, connection pools
    }
    for (let round = 0; round < roundCount; round++) {
      for (let i = 0; i < modes.length; i++) {
        const mode = modes[(i + round) % modes.length]!
        rounds.get(mode)!.push(await load(services.get(mode)!, cookies.get(mode)!, seconds))
      }
    }
    // Phase 4: the Redis-backed instance with its Redis frozen: connections stay open, nothing answers.
    redis.child.kill('SIGSTOP')
    try {
      paused = await load(services.get('redis')!, cookies.get('redis')!, seconds)
    } finally {
      redis.child.kill('SIGCONT')
    }
  } finally {
    for (const service of services.values()) await stopService(service)
    const exited = new Promise((resolve) => redis.child.once('exit', resolve))
    redis.child.kill('SIGTERM')
    await exited
  }

  const off = medianRound(rounds.get('off')!)
  const memory = medianRound(rounds.get('memory')!)
  const shared = medianRound(rounds.get('redis')!)
  console.log(`\nGET /api/auth/me (cookie), ${connections} connections, ${roundCount} rounds of ${seconds} s per mode (median round shown), database: ${process.env.DATABASE_URL === undefined ? 'PGlite (embedded)' : 'Postgres'}`)
  for (const mode of modes) console.log(`  ${mode.padEnd(7)} rounds: ${rounds.get(mode)!.map((m) => `${m.rps.toFixed(0)} req/s`).join(', ')}`)
  console.log(row('1. no limiter', off))
  console.log(row('2. limiter, memory store', memory))
  console.log(row('3. limiter, Redis store', shared))
  console.log(row('4. limiter, Redis frozen (SIGSTOP)', paused))
  const memoryRatio = memory.rps / off.rps
  const redisRatio = shared.rps / memory.rps
  console.log('\nGoals:')
  console.log(goal(`memory / no limiter = ${memoryRatio.toFixed(2)}× (goal ≥ 0.85×)`, memoryRatio >= 0.85))
  console.log(goal(`Redis / memory = ${redisRatio.toFixed(2)}× (goal ≥ 0.80×)`, redisRatio >= 0.8))
  console.log(goal(`frozen Redis: p99 ${paused.p99} ms (goal < 50 ms)`, paused.p99 < 50))
  console.log(goal(`frozen Redis: ${paused.fiveXx} responses 5xx (goal 0)`, paused.fiveXx === 0))
  // Throughput on a shared machine swings by ±20 % between rounds; the service's CPU time per
  // request is the steadier view of the same cost.
  const cpu = (mode: Mode): number => median(rounds.get(mode)!.map((r) => r.cpuUs))
  console.log(`\nService CPU per request (median of rounds): no limiter ${cpu('off').toFixed(0)} µs, memory ${cpu('memory').toFixed(0)} µs, Redis ${cpu('redis').toFixed(0)} µs`)
  console.log(`  as throughput ratios at equal CPU: memory / no limiter ${(cpu('off') / cpu('memory')).toFixed(2)}×, Redis / memory ${(cpu('memory') / cpu('redis')).toFixed(2)}×`)
  const all = [...[...rounds.values()].flat(), paused]
  const refused = all.reduce((sum, m) => sum + m.non2xx, 0)
  if (refused > 0) console.log(`\nwarning: ${refused} non-2xx responses in total; the measurements include them`)
}

// Last, so every constant above is initialised before either role runs.
if (process.argv[2] === 'serve') {
  await serve(process.argv[3] as Mode)
} else {
  await main()
}
