// Shared pieces of the benchmark scripts: child-process targets, autocannon runs, sign-in.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import autocannon from 'autocannon'
import type { FastifyInstance } from 'fastify'

export interface Target { url: string, dataDir: string, child: ChildProcess, stop (): Promise<void> }

/** The JWT secret of every benchmark's service (a benchmark that signs tokens itself needs the same). */
export const BENCH_JWT_SECRET = 'bench-secret-bench-secret-bench-secret-0123'

/**
 * The service as production runs it: compiled JavaScript from `dist/` (built here if needed), not
 * TypeScript through tsx, whose keep-names helper adds a cost to every closure created. The
 * checkout is this one, or BENCH_SERVICE_ROOT's (bench/rpc-paths.ts compares several checkouts).
 */
export async function importBuilt (): Promise<{ buildApp: typeof import('../src/app.js').buildApp, loadConfig: typeof import('../src/config.js').loadConfig }> {
  const root = process.env.BENCH_SERVICE_ROOT ?? join(import.meta.dirname, '..')
  const app = pathToFileURL(builtModule(root, 'app.js')).href
  const config = pathToFileURL(builtModule(root, 'config.js')).href
  const [{ buildApp }, { loadConfig }] = await Promise.all([import(app) as Promise<typeof import('../src/app.js')>, import(config) as Promise<typeof import('../src/config.js')>])
  return { buildApp, loadConfig }
}

/** Tier maxima for the app's `rateLimit.maxOverride`: a bench user's thousands of requests a minute
 *  all get real answers, never 429s (a cheaper reply would flatter the service). */
/** A positive number from the environment (a bench's knob), or `fallback`. */
export function positiveEnv (name: string, fallback: number): number {
  const value = Number(process.env[name])
  return Number.isFinite(value) && value > 0 ? value : fallback
}

export const UNLIMITED_TIERS = { strict: 1e9, expensive: 1e9, upload: 1e9, canvas: 1e9, write: 1e9, read: 1e9, standard: 1e9 }

/** A compiled module of `src/` in a checkout: `dist/src/<path>`, or `dist/<path>` in checkouts from
 *  before migrations/ moved to the top level (a baseline build of an older commit). */
export function builtModule (root: string, path: string): string {
  const current = join(root, 'dist', 'src', path)
  return existsSync(current) ? current : join(root, 'dist', path)
}

/** Compiles `src/` and `migrations/` into `dist/` (incremental: quick when nothing changed); every benchmark starts
 *  with it, so it also says which Node the run is on (targets run on the same binary). */
export function buildDist (root = join(import.meta.dirname, '..')): void {
  console.log(`node ${process.version}`)
  const result = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' })
  if (result.status !== 0) throw new Error(`npm run build failed in ${root}`)
}

const children = new Set<ChildProcess>()
process.on('exit', () => { for (const child of children) child.kill('SIGKILL') })

/** Kills the child when this process exits, even on a crash, so no server outlives its benchmark. */
export function reapOnExit<C extends ChildProcess> (child: C): C {
  children.add(child)
  child.once('exit', () => { children.delete(child) })
  return child
}

/** `extraNodeArgs`: flags for the target's node before the script (bench/telemetry.ts: the tracing preload). */
export async function startTarget (kind: 'service' | 'raw' | 'raw-pg' | 'frameworks', env: Record<string, string | undefined> = {}, extraNodeArgs: string[] = []): Promise<Target> {
  const dataDir = mkdtempSync(join(tmpdir(), 'canvas-bench-'))
  // BENCH_NODE_ARGS passes flags to the service's node (e.g. `--cpu-prof --cpu-prof-dir=prof` to profile it).
  const nodeArgs = kind === 'service' ? [...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter((a) => a !== ''), ...extraNodeArgs] : []
  const child = reapOnExit(spawn(process.execPath, [...nodeArgs, '--import=tsx', join(import.meta.dirname, 'serve.ts'), kind], {
    env: { ...process.env, NODE_ENV: 'production', JWT_SECRET: BENCH_JWT_SECRET, DATA_DIR: dataDir, ...env },
    stdio: ['ignore', 'pipe', 'inherit']
  }))
  const url = await new Promise<string>((resolve, reject) => {
    let out = ''
    child.stdout?.on('data', function listening (chunk: Buffer) {
      out += chunk.toString()
      const match = /^listening (\S+)$/m.exec(out)
      if (match?.[1] === undefined) return
      // What the target writes from now on (its logs, BENCH_LOG_LEVEL) is read and dropped.
      child.stdout?.off('data', listening).resume()
      resolve(match[1])
    })
    child.on('exit', (code) => { reject(new Error(`${kind} exited with ${String(code)}`)) })
  })
  return {
    url,
    dataDir,
    child,
    stop: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
    }
  }
}

export interface Measurement { rps: number, p99: number, errors: number, non2xx: number }

/** One scenario: a 1 s unmeasured warm-up (JIT, pools, caches), then the measured run. */
export async function measure (options: autocannon.Options): Promise<Measurement> {
  await autocannon({ connections: 50, ...options, duration: 1 })
  const result = await autocannon({ connections: 50, duration: 5, ...options })
  return { rps: result.requests.average, p99: result.latency.p99, errors: result.errors, non2xx: result.non2xx }
}

/** Signs a user in through the REST flow (reading the link from the target's outbox); returns the session JWT. */
export async function signIn (target: Target, email: string): Promise<string> {
  const requested = await fetch(`${target.url}/api/auth/request-login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email }) })
  if (!requested.ok) throw new Error(`request-login: ${requested.status}`)
  const outbox = join(target.dataDir, 'outbox')
  const mail = readdirSync(outbox).sort().map((f) => JSON.parse(readFileSync(join(outbox, f), 'utf8')) as { to: string, text: string }).filter((m) => m.to === email).at(-1)
  const token = /token=([A-Za-z0-9_-]+)/.exec(mail?.text ?? '')?.[1]
  const authorized = await fetch(`${target.url}/api/auth/authorize?token=${token ?? ''}`, { redirect: 'manual' })
  const cookie = /app_session=([^;]+)/.exec(authorized.headers.get('set-cookie') ?? '')?.[1]
  if (cookie === undefined) throw new Error(`authorize: ${authorized.status}`)
  return cookie
}

/** Signs a user in through the mailed link on an app built in this process (its DATA_DIR's outbox);
 *  returns the session token (the cookie, and a Bearer token for RPC) and the user's id. */
export async function signInInProcess (app: FastifyInstance, dataDir: string, email: string): Promise<{ cookie: string, userId: string }> {
  await app.inject({ method: 'POST', url: '/api/auth/request-login', payload: { email } })
  const outbox = join(dataDir, 'outbox')
  const link = readdirSync(outbox).map((f) => readFileSync(join(outbox, f), 'utf8')).find((m) => m.includes(email)) ?? ''
  const authorized = await app.inject({ url: `/api/auth/authorize?token=${/token=([A-Za-z0-9_-]+)/.exec(link)?.[1] ?? ''}` })
  const cookie = authorized.cookies.find((c) => c.name === 'app_session')?.value ?? ''
  const userId = (await app.inject({ url: '/api/auth/me', cookies: { app_session: cookie } })).json().data.id as string
  return { cookie, userId }
}

/** One scenario's line; `ratio` is its throughput against the baseline (none for the baseline itself). */
export function row (name: string, m: Measurement, ratio?: number): string {
  const against = ratio === undefined ? '' : `  ratio ${ratio.toFixed(2)}×`
  const bad = m.errors + m.non2xx > 0 ? `  (errors ${m.errors}, non-2xx ${m.non2xx})` : ''
  return `${name.padEnd(40)} ${m.rps.toFixed(0).padStart(8)} req/s   p99 ${String(m.p99).padStart(4)} ms${against}${bad}`
}

const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100

/** CPU time (user + system) a process has used so far, in seconds, from /proc; NaN once it is gone. */
export function processCpuSeconds (pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${String(pid)}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS
  } catch {
    return Number.NaN
  }
}

/** Signs `count` users up and in through the core's own magic-link flow; returns their session JWTs. */
export async function seedUsers (count: number, label: string): Promise<string[]> {
  const { buildApp, loadConfig } = await importBuilt()
  const dataDir = mkdtempSync(join(tmpdir(), 'canvas-bench-admission-seed-'))
  const app = await buildApp(loadConfig({ ...process.env, NODE_ENV: 'production', JWT_SECRET: BENCH_JWT_SECRET, DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent' }), { rateLimit: false })
  try {
    const emails = Array.from({ length: count }, (_, i) => `admission-${label}-${i}@example.test`)
    const inParallel = async <T>(items: string[], work: (item: string) => Promise<T>): Promise<T[]> => {
      const results: T[] = new Array<T>(items.length)
      let next = 0
      await Promise.all(Array.from({ length: 16 }, async () => {
        while (next < items.length) {
          const i = next++
          results[i] = await work(items[i]!)
        }
      }))
      return results
    }
    await inParallel(emails, async (email) => await app.core.auth.requestLogin({ email }, { poll: false }))
    const outbox = join(dataDir, 'outbox')
    const linkOf = new Map<string, string>()
    for (const file of readdirSync(outbox)) {
      const mail = JSON.parse(readFileSync(join(outbox, file), 'utf8')) as { to: string, text: string }
      const token = /token=([A-Za-z0-9_-]+)/.exec(mail.text)?.[1]
      if (token !== undefined) linkOf.set(mail.to, token)
    }
    const signedIn = await inParallel(emails, async (email) => await app.core.auth.signInWithLink({ token: linkOf.get(email) ?? '' }))
    return signedIn.map((s) => s.sessionToken)
  } finally {
    await app.close()
  }
}

/**
 * Each connection cycles over every request, starting at its own offset (spaced evenly), so requests
 * in flight at once are for different users, as with real callers. Given one shared list, every
 * connection would start at user 0 and they would stay in lockstep: all 50 asking for the same user
 * at once, so 50 concurrent cache misses per user on the first pass instead of one.
 */
export function spreadOver (requests: NonNullable<autocannon.Options['requests']>, connections: number): Pick<autocannon.Options, 'requests' | 'setupClient'> {
  let clients = 0
  const step = Math.max(1, Math.floor(requests.length / connections))
  return {
    requests,
    setupClient: (client) => {
      const offset = (clients++ * step) % requests.length
      if (offset > 0) client.setRequests([...requests.slice(offset), ...requests.slice(0, offset)])
    }
  }
}
