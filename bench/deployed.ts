// `npx tsx bench/deployed.ts` (issue 31): the service as `npm start` runs it — `node
// --enable-source-maps dist/src/server.js`, logs at `info` (the production default) into a file as a
// log collector would take them, Postgres + Redis, SPEC's tiers on — against raw node:http in the
// same run, and beside it the benchmark configuration (logs silent, no limiter) on the same database:
// 1. GET /health against raw node:http answering a fixed body (goal ≥ 0.6×);
// 2. GET /api/auth/me cycling over 1,000 signed-in users (SPEC's `read` tier applies to each), against
//    raw node:http answering the same requests (goal ≥ 0.5×);
// 3. GET /api/rooms/:roomId of a public room, cycling over the same users, against raw node:http + pg
//    running the same statement on a pool of the same size (bench/serve.ts raw-pg; goal ≥ 0.5×).
// Every scenario runs once per round, the pairs back to back; ratios are medians of same-round ratios.
// 429s are counted (there must be none: 1,000 users stay far below 300 a minute each). Each target's
// own CPU time per request (its process, from /proc; Postgres and Redis not included) is shown too.
//   createdb -h 127.0.0.1 -U postgres bench_deployed
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_deployed REDIS_URL=redis://127.0.0.1:6379/9 npx tsx bench/deployed.ts
// BENCH_ROUNDS (3), BENCH_SECONDS (5), BENCH_USERS (1000), BENCH_CONNECTIONS (50); BENCH_NODE_ARGS for the deployed server.
import { spawn } from 'node:child_process'
import { mkdtempSync, openSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { BENCH_JWT_SECRET, buildDist, processCpuSeconds, reapOnExit, seedUsers, spreadOver, startTarget } from './harness.js'

const databaseUrl = process.env.DATABASE_URL
if (databaseUrl === undefined || process.env.REDIS_URL === undefined) {
  console.error('bench/deployed.ts measures on Postgres + Redis: set DATABASE_URL (a database of its own) and REDIS_URL.')
  process.exit(2)
}
buildDist()
const duration = Number(process.env.BENCH_SECONDS ?? 5)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const userCount = Number(process.env.BENCH_USERS ?? 1000)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50)
const root = join(import.meta.dirname, '..')

/** BENCH_NODE_ARGS: flags for the deployed server's node (e.g. `--cpu-prof --cpu-prof-dir=prof` to profile it). */
const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter((arg) => arg !== '')

interface Served { url: string, pid: number | undefined, logFile?: string, stop (): Promise<void> }

/** `npm start` without its build step (done above): the built server, its stdout into a file. */
async function startDeployed (): Promise<Served> {
  const dataDir = mkdtempSync(join(tmpdir(), 'canvas-bench-deployed-'))
  const logFile = join(dataDir, 'stdout.log')
  const child = reapOnExit(spawn(process.execPath, [...nodeArgs, '--enable-source-maps', 'dist/src/server.js'], {
    cwd: root,
    env: { ...process.env, NODE_ENV: 'production', JWT_SECRET: BENCH_JWT_SECRET, DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: undefined, RATE_LIMIT_KEY_PREFIX: `bench-deployed-${Date.now()}:` },
    stdio: ['ignore', openSync(logFile, 'a'), 'inherit']
  }))
  const deadline = Date.now() + 60_000
  let url: string | undefined
  while (url === undefined) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error('the deployed server did not start')
    await new Promise((resolve) => setTimeout(resolve, 100))
    url = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(readFileSync(logFile, 'utf8'))?.[1]
  }
  return {
    url,
    pid: child.pid,
    logFile,
    stop: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
    }
  }
}

const raw = await startTarget('raw')
const rawPg = await startTarget('raw-pg')
const deployed = await startDeployed()
const silent = await startTarget('service', { BENCH_LIMITER: 'off', BENCH_LOG_LEVEL: 'silent', RATE_LIMIT_KEY_PREFIX: `bench-silent-${Date.now()}:` })
console.log(`targets: raw ${String(raw.child.pid)}, raw+pg ${String(rawPg.child.pid)}, deployed ${String(deployed.pid)} (npm start: logs at info, SPEC tiers), silent ${String(silent.child.pid)} (logs silent, no limiter)`)

const started = Date.now()
const tokens = await seedUsers(userCount, `deployed-${started.toString(36)}`)
console.log(`seeded ${tokens.length} users through the sign-in flow in ${((Date.now() - started) / 1000).toFixed(1)} s`)
const created = await fetch(`${deployed.url}/api/rooms`, { method: 'POST', headers: { cookie: `app_session=${tokens[0]!}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bench', isPublic: true }) })
const roomId = (await created.json() as { data: { id: string } }).data.id

type Requests = NonNullable<autocannon.Options['requests']>
const asUsers = (path: string): Requests => tokens.map((token) => ({ method: 'GET', path, headers: { cookie: `app_session=${token}` } }))

/** `cpuUs`: the target's CPU time per request (from /proc), which barely moves with the machine's load, unlike req/s. */
interface Measurement { rps: number, p99: number, non2xx: number, tooMany: number, errors: number, cpuUs: number }

async function measure (pid: number | undefined, url: string, requests?: Requests): Promise<Measurement> {
  const options: autocannon.Options = { url, connections, ...(requests === undefined ? {} : spreadOver(requests, connections)) }
  await autocannon({ ...options, duration: 1 })
  const cpuBefore = processCpuSeconds(pid)
  const result = await autocannon({ ...options, duration })
  return {
    cpuUs: (processCpuSeconds(pid) - cpuBefore) * 1e6 / result.requests.total,
    rps: result.requests.average,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    tooMany: (result.statusCodeStats as Record<string, { count: number } | undefined>)['429']?.count ?? 0,
    errors: result.errors
  }
}

const scenarios: Array<[string, () => Promise<Measurement>]> = [
  ['raw node:http', async () => await measure(raw.child.pid, `${raw.url}/`)],
  ['GET /health, deployed', async () => await measure(deployed.pid, `${deployed.url}/health`)],
  ['GET /health, silent', async () => await measure(silent.child.pid, `${silent.url}/health`)],
  ['raw node:http, /me requests', async () => await measure(raw.child.pid, raw.url, asUsers('/api/auth/me'))],
  ['GET /api/auth/me, deployed', async () => await measure(deployed.pid, deployed.url, asUsers('/api/auth/me'))],
  ['GET /api/auth/me, silent', async () => await measure(silent.child.pid, silent.url, asUsers('/api/auth/me'))],
  ['raw node:http + pg, room query', async () => await measure(rawPg.child.pid, rawPg.url, asUsers(`/api/rooms/${roomId}`))],
  ['GET /api/rooms/:roomId, deployed', async () => await measure(deployed.pid, deployed.url, asUsers(`/api/rooms/${roomId}`))],
  ['GET /api/rooms/:roomId, silent', async () => await measure(silent.child.pid, silent.url, asUsers(`/api/rooms/${roomId}`))]
]
const results = new Map<string, Measurement[]>(scenarios.map(([name]) => [name, []]))
for (let round = 1; round <= rounds; round++) {
  console.log(`round ${round} of ${rounds}`)
  for (const [name, run] of scenarios) results.get(name)?.push(await run())
}
const accessLines = readFileSync(deployed.logFile!, 'utf8').split('\n').filter((line) => line.includes('"msg":"request"')).length
await Promise.all([raw.stop(), rawPg.stop(), deployed.stop(), silent.stop()])

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN
const of = (name: string): Measurement[] => results.get(name) ?? []
const ratio = (a: string, b: string): number => median(of(a).map((m, i) => m.rps / (of(b)[i]?.rps ?? NaN)))
console.log(`\nPostgres + Redis, ${rounds} rounds of ${duration} s, ${connections} connections, ${userCount} users (median round)`)
for (const [name] of scenarios) {
  const all = of(name)
  const m = all.find((x) => x.rps === median(all.map((y) => y.rps))) ?? all[0]!
  const bad = m.errors + m.non2xx > 0 ? `  (errors ${m.errors}, non-2xx ${m.non2xx}, of them 429 ${m.tooMany})` : ''
  const cpuUs = median(all.map((x) => x.cpuUs))
  console.log(`${name.padEnd(36)} ${m.rps.toFixed(0).padStart(8)} req/s   p99 ${String(m.p99).padStart(4)} ms   CPU ${cpuUs.toFixed(0).padStart(4)} µs/request${bad}`)
}
console.log('\n                         deployed   silent, no limiter   goal')
const line = (label: string, a: string, b: string, base: string, goal: string): void => {
  console.log(`${label.padEnd(24)} ${ratio(a, base).toFixed(2).padStart(7)}×   ${ratio(b, base).toFixed(2).padStart(7)}×            ≥ ${goal}×`)
}
line('/health / raw', 'GET /health, deployed', 'GET /health, silent', 'raw node:http', '0.6')
line('/me (1,000 users) / raw', 'GET /api/auth/me, deployed', 'GET /api/auth/me, silent', 'raw node:http, /me requests', '0.5')
line('GET room / raw + pg', 'GET /api/rooms/:roomId, deployed', 'GET /api/rooms/:roomId, silent', 'raw node:http + pg, room query', '0.5')
console.log(`\nthe deployed service wrote ${accessLines} access lines (one per request it answered)`)
