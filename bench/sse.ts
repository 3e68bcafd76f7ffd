// `npx tsx bench/sse.ts`: the live event stream measured next to a bare node:http SSE broadcaster
// (bench/sse-raw.ts) in the same run. Subscribers live in a separate child process
// (bench/sse-subscribers.ts); latency is from the write's acknowledgement (its HTTP response) to the
// message's arrival at a subscriber, over every delivery. Scenarios:
//   1. fan-out: N subscribers of one room, R events/s (a room rename each) — p50/p99 vs raw;
//   2. idle memory: M open streams — resident memory per stream (and per raw connection);
//   3. cross-instance (needs DATABASE_URL): two instances on one Postgres, subscribers on B, writes
//      at each offered rate to B (same instance) and then to A (the other one) — p99 difference, losses.
// Options: --subscribers 2000 --rate 10 --seconds 10 --rounds 3 --idle 5000 --cross-subscribers 20
//          --cross-rates 250,1000 --cross-seconds 5 --only fanout,idle,cross
//          (DATABASE_URL / REDIS_URL select Postgres / Redis).
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildDist, reapOnExit } from './harness.js'

const option = (name: string, fallback: number): number => {
  const at = process.argv.indexOf(`--${name}`)
  const value = at === -1 ? undefined : Number(process.argv[at + 1])
  return value === undefined || !Number.isFinite(value) ? fallback : value
}
const SUBSCRIBERS = option('subscribers', 2000)
const RATE = option('rate', 10)
const SECONDS = option('seconds', 10)
const IDLE = option('idle', 5000)
const CROSS_SUBSCRIBERS = option('cross-subscribers', 20)
const CROSS_RATES = (process.argv.includes('--cross-rates') ? process.argv[process.argv.indexOf('--cross-rates') + 1] ?? '' : '250,1000').split(',').map(Number).filter((n) => n > 0)
const CROSS_SECONDS = option('cross-seconds', 5)
const ROUNDS = option('rounds', 3)
const SCENARIOS = new Set((process.argv[process.argv.indexOf('--only') + 1] ?? '').split(',').filter((x) => process.argv.includes('--only') && x !== ''))
const runs = (name: string): boolean => SCENARIOS.size === 0 || SCENARIOS.has(name)
const STREAMS_PER_USER = 5
const STREAMS_PER_IP = 20

const now = (): number => performance.timeOrigin + performance.now()
const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }
const fixed = (n: number): string => Number.isFinite(n) ? n.toFixed(1).padStart(7) : '    n/a'

function spawnScript (file: string, env: Record<string, string | undefined> = {}, flags: string[] = []): ChildProcess {
  return reapOnExit(spawn(process.execPath, [...flags, '--import=tsx', join(import.meta.dirname, file)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit', 'ipc']
  }))
}

async function listening (child: ChildProcess): Promise<string> {
  return await new Promise((resolve, reject) => {
    let out = ''
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const match = /listening (\S+)/.exec(out)
      if (match?.[1] !== undefined) resolve(match[1])
    })
    child.once('exit', (code) => { reject(new Error(`exited with ${String(code)}`)) })
  })
}

/** One request at a time to the subscriber child. */
async function ask<T> (child: ChildProcess, message: object): Promise<T> {
  const reply = new Promise<T>((resolve) => { child.once('message', (m) => { resolve(m as T) }) })
  child.send(message)
  return await reply
}

interface Service { url: string, dataDir: string, child: ChildProcess, stop (): Promise<void> }

/** A service instance in its own process (bench/sse-serve.ts), sharing DATABASE_URL / REDIS_URL from the environment. */
async function startService (env: Record<string, string>): Promise<Service> {
  const dataDir = mkdtempSync(join(tmpdir(), 'canvas-bench-sse-'))
  const child = spawnScript('sse-serve.ts', { NODE_ENV: 'production', JWT_SECRET: 'bench-secret-bench-secret-bench-secret-0123', DATA_DIR: dataDir, ...env }, ['--expose-gc'])
  const url = await listening(child)
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

/** Resident size of the service after full collections, in KB. */
async function serviceRssKb (service: Service): Promise<number> {
  return (await ask<{ rss: number }>(service.child, { cmd: 'rss' })).rss / 1024
}

function rssKb (pid: number | undefined): number {
  const status = readFileSync(`/proc/${String(pid)}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN)
}

const clientIp = (group: number): string => `10.${(group >> 16) & 255}.${(group >> 8) & 255}.${group & 255}`

/** Signs `count` users in through the mailed-link flow (the outbox of `target`); returns their session cookies. */
async function signInMany (target: Service, count: number, label: string): Promise<string[]> {
  const outbox = join(target.dataDir, 'outbox')
  const seen = new Set<string>()
  const tokens = new Map<string, string>()
  const tokenFor = (email: string): string | undefined => {
    for (const file of readdirSync(outbox)) {
      if (seen.has(file)) continue
      try {
        const mail = JSON.parse(readFileSync(join(outbox, file), 'utf8')) as { to: string, text: string }
        const token = /token=([A-Za-z0-9_-]+)/.exec(mail.text)?.[1]
        if (token !== undefined) tokens.set(mail.to, token)
        seen.add(file)
      } catch {
        // still being written; read it next time
      }
    }
    return tokens.get(email)
  }
  const cookies: string[] = new Array<string>(count)
  let next = 0
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < count) {
      const i = next++
      const email = `${label}-${i}@bench.test`
      const headers = { 'content-type': 'application/json', 'x-forwarded-for': clientIp(60_000 + i) }
      const requested = await fetch(`${target.url}/api/auth/request-login`, { method: 'POST', headers, body: JSON.stringify({ email }) })
      if (!requested.ok) throw new Error(`request-login: ${requested.status}`)
      const token = tokenFor(email)
      const authorized = await fetch(`${target.url}/api/auth/authorize?token=${token ?? ''}`, { redirect: 'manual', headers })
      const cookie = /app_session=([^;]+)/.exec(authorized.headers.get('set-cookie') ?? '')?.[1]
      if (cookie === undefined) throw new Error(`authorize: ${authorized.status}`)
      cookies[i] = cookie
    }
  }))
  return cookies
}

interface Drive { acks: Array<[number, number]>, failures: number, achievedRate: number }
let nextSeq = 1

/** Issues `rate × seconds` writes on schedule (open loop), recording each acknowledgement time. */
async function drive (rate: number, seconds: number, write: (seq: number) => Promise<boolean>): Promise<Drive> {
  const acks: Array<[number, number]> = []
  const pending: Array<Promise<void>> = []
  let failures = 0
  const total = Math.round(rate * seconds)
  const start = now()
  for (let i = 0; i < total; i++) {
    const wait = start + i * 1000 / rate - now()
    if (wait >= 1) await sleep(wait)
    const seq = nextSeq++
    pending.push(write(seq).then((ok) => { if (ok) acks.push([seq, now()]); else failures++ }, () => { failures++ }))
  }
  await Promise.all(pending)
  return { acks, failures, achievedRate: total / ((now() - start) / 1000) }
}

interface Report { received: number, p50: number, p99: number, max: number }

/** Waits until every expected message arrived, or none arrived for 3 s (those are counted as lost). */
async function settle (subscribers: ChildProcess, expected: number): Promise<void> {
  let last = -1
  let still = now()
  for (;;) {
    const { received } = await ask<{ received: number }>(subscribers, { cmd: 'received' })
    if (received >= expected) return
    if (received !== last) {
      last = received
      still = now()
    } else if (now() - still > 3_000) {
      return
    }
    await sleep(100)
  }
}

async function measure (subscribers: ChildProcess, connections: number, rate: number, seconds: number, write: (seq: number) => Promise<boolean>): Promise<Report & Drive & { expected: number }> {
  // Warm-up (JIT, keep-alive connections), not counted.
  const warm = await drive(rate, Math.min(1, seconds), write)
  await settle(subscribers, warm.acks.length * connections)
  await ask<Report>(subscribers, { cmd: 'report', acks: warm.acks })
  const driven = await drive(rate, seconds, write)
  await settle(subscribers, driven.acks.length * connections)
  const report = await ask<Report>(subscribers, { cmd: 'report', acks: driven.acks })
  return { ...driven, ...report, expected: driven.acks.length * connections }
}

function line (label: string, r: Report & Drive & { expected: number }): string {
  const lost = r.expected - r.received
  return `  ${label.padEnd(34)} p50 ${fixed(r.p50)} ms   p99 ${fixed(r.p99)} ms   max ${fixed(r.max)} ms   ` +
    `delivered ${r.received}/${r.expected}${lost === 0 ? '' : ` (LOST ${lost})`}   writes ${r.acks.length} at ${r.achievedRate.toFixed(0)}/s${r.failures > 0 ? ` (${r.failures} failed)` : ''}`
}

async function openAll (subscribers: ChildProcess, targets: Array<{ url: string, headers: Record<string, string> }>): Promise<void> {
  const result = await ask<{ opened: number, failed: number, statuses: Record<string, number> }>(subscribers, { cmd: 'open', targets })
  if (result.failed > 0) throw new Error(`could not open every stream: ${JSON.stringify(result.statuses)}`)
}

const database = process.env.DATABASE_URL === undefined ? 'PGlite (embedded)' : 'Postgres'
buildDist()
console.log(`database: ${database}, cache: ${process.env.REDIS_URL === undefined ? 'memory' : 'Redis'}`)
const serviceEnv = { TRUST_PROXY: '127.0.0.1' }
const service = await startService(serviceEnv)
const rawChild = spawnScript('sse-raw.ts')
const rawUrl = await listening(rawChild)
let subscribers = spawnScript('sse-subscribers.ts')

const userCount = Math.ceil(Math.max(SUBSCRIBERS, IDLE, CROSS_SUBSCRIBERS) / STREAMS_PER_USER)
const signInStarted = now()
const [ownerCookie, ...cookies] = await signInMany(service, userCount + 1, 'sse')
console.log(`signed in ${userCount + 1} users in ${((now() - signInStarted) / 1000).toFixed(1)} s`)
const owner = { cookie: `app_session=${ownerCookie ?? ''}`, 'content-type': 'application/json' }
const room = await (await fetch(`${service.url}/api/rooms`, { method: 'POST', headers: owner, body: JSON.stringify({ name: 'bench', isPublic: true }) })).json() as { data: { id: string } }
const roomId = room.data.id
const members = Math.ceil(Math.max(SUBSCRIBERS, CROSS_SUBSCRIBERS) / STREAMS_PER_USER)
for (let i = 0; i < members; i += 20) {
  await Promise.all(cookies.slice(i, Math.min(i + 20, members)).map(async (cookie) => {
    const res = await fetch(`${service.url}/api/canvas/state?roomId=${roomId}`, { headers: { cookie: `app_session=${cookie}` } })
    if (!res.ok) throw new Error(`join: ${res.status}`)
  }))
}

const serviceTargets = (url: string, count: number): Array<{ url: string, headers: Record<string, string> }> =>
  Array.from({ length: count }, (_, k) => ({
    url: `${url}/api/sync/subscribe`,
    headers: { cookie: `app_session=${cookies[Math.floor(k / STREAMS_PER_USER)] ?? ''}`, 'x-forwarded-for': clientIp(Math.floor(k / STREAMS_PER_IP)) }
  }))
const rawTargets = (count: number): Array<{ url: string, headers: Record<string, string> }> =>
  Array.from({ length: count }, () => ({ url: `${rawUrl}/sub`, headers: {} }))

async function freshSubscribers (): Promise<void> {
  await ask(subscribers, { cmd: 'close' })
  subscribers.kill()
  subscribers = spawnScript('sse-subscribers.ts')
  await sleep(500) // the service notices the closed streams and frees their slots
}

// Same-size messages for the raw broadcaster: the service's envelope of a renamed room.
const sample = { id: roomId, name: 'seq-0', isPublic: true, createdBy: 'user_xxxxxxxxxxxxxxxxxxxxxx', createdAt: new Date().toISOString(), updatedAt: new Date().toISOString() }
const rename = (url: string) => async (seq: number): Promise<boolean> => {
  const res = await fetch(`${url}/api/rooms/${roomId}`, { method: 'PATCH', headers: owner, body: JSON.stringify({ name: `seq-${seq}` }) })
  await res.arrayBuffer()
  return res.ok
}
const publishRaw = async (seq: number): Promise<boolean> => {
  const body = JSON.stringify({ type: 'room:updated', payload: { ...sample, name: `seq-${seq}` }, timestamp: new Date().toISOString(), userId: sample.createdBy })
  const res = await fetch(`${rawUrl}/publish`, { method: 'POST', body })
  await res.arrayBuffer()
  return res.ok
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length / 2
  return sorted.length % 2 === 1 ? sorted[Math.floor(middle)] ?? Number.NaN : ((sorted[middle - 1] ?? Number.NaN) + (sorted[middle] ?? Number.NaN)) / 2
}

// 2. Idle memory first, on a settled process.
if (runs('idle')) {
  await sleep(1_000)
  const idleBefore = await serviceRssKb(service)
  await openAll(subscribers, serviceTargets(service.url, IDLE))
  await sleep(3_000)
  const idleAfter = await serviceRssKb(service)
  await freshSubscribers()
  const rawBefore = rssKb(rawChild.pid)
  await openAll(subscribers, rawTargets(IDLE))
  await sleep(3_000)
  const rawAfter = rssKb(rawChild.pid)
  await freshSubscribers()
  console.log(`\n2. Idle streams: ${IDLE} open`)
  console.log(`  service: +${((idleAfter - idleBefore) / 1024).toFixed(1)} MB resident → ${((idleAfter - idleBefore) / IDLE).toFixed(1)} KB per stream (goal ≤ 30 KB)`)
  console.log(`  raw node:http: +${((rawAfter - rawBefore) / 1024).toFixed(1)} MB resident → ${((rawAfter - rawBefore) / IDLE).toFixed(1)} KB per connection`)
}

// 1. Fan-out: rounds alternate raw and service (this machine is shared; medians damp its noise).
if (runs('fanout')) {
  console.log(`\n1. Fan-out: ${SUBSCRIBERS} subscribers of one room, ${RATE} events/s for ${SECONDS} s, ${ROUNDS} round(s) each`)
  const raws: Array<Awaited<ReturnType<typeof measure>>> = []
  const services: Array<Awaited<ReturnType<typeof measure>>> = []
  for (let round = 1; round <= ROUNDS; round++) {
    await openAll(subscribers, rawTargets(SUBSCRIBERS))
    raws.push(await measure(subscribers, SUBSCRIBERS, RATE, SECONDS, publishRaw))
    await freshSubscribers()
    console.log(line(`raw node:http broadcaster, round ${round}`, raws[raws.length - 1] as Awaited<ReturnType<typeof measure>>))
    await openAll(subscribers, serviceTargets(service.url, SUBSCRIBERS))
    services.push(await measure(subscribers, SUBSCRIBERS, RATE, SECONDS, rename(service.url)))
    await freshSubscribers()
    console.log(line(`service, round ${round}`, services[services.length - 1] as Awaited<ReturnType<typeof measure>>))
  }
  const rawP99 = median(raws.map((r) => r.p99))
  const serviceP99 = median(services.map((r) => r.p99))
  const rawP50 = median(raws.map((r) => r.p50))
  const serviceP50 = median(services.map((r) => r.p50))
  console.log(`  median p50: raw ${rawP50.toFixed(1)} ms, service ${serviceP50.toFixed(1)} ms (${(serviceP50 / rawP50).toFixed(2)}×)`)
  console.log(`  median p99: raw ${rawP99.toFixed(1)} ms, service ${serviceP99.toFixed(1)} ms → ratio ${(serviceP99 / rawP99).toFixed(2)}× (goal ≤ 1.5×)`)
}

// 3. Cross-instance, on Postgres only (PGlite is one process's database).
if (!runs('cross')) {
  // not asked for
} else if (process.env.DATABASE_URL !== undefined) {
  const other = await startService(serviceEnv)
  await openAll(subscribers, serviceTargets(other.url, CROSS_SUBSCRIBERS))
  console.log(`\n3. Cross-instance: ${CROSS_SUBSCRIBERS} subscribers on instance B, ${CROSS_SECONDS} s per offered rate`)
  for (const rate of CROSS_RATES) {
    const same = await measure(subscribers, CROSS_SUBSCRIBERS, rate, CROSS_SECONDS, rename(other.url))
    const cross = await measure(subscribers, CROSS_SUBSCRIBERS, rate, CROSS_SECONDS, rename(service.url))
    console.log(`  offered ${rate} events/s:`)
    console.log(line('  written to B (same instance)', same))
    console.log(line('  written to A (the other instance)', cross))
    console.log(`    p99 difference ${(cross.p99 - same.p99).toFixed(1)} ms (goal ≤ +5 ms), lost ${cross.expected - cross.received} (goal 0)`)
  }
  await freshSubscribers()
  await other.stop()
} else {
  console.log('\n3. Cross-instance: skipped (set DATABASE_URL to run two instances on one Postgres)')
}

await ask(subscribers, { cmd: 'close' })
subscribers.kill()
rawChild.kill('SIGTERM')
await service.stop()
