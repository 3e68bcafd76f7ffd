// `npx tsx bench/live-stalls.ts` (issue 28, items 1 and 2): live delivery while the service does the
// work that used to hold it back, against the same run without that work, on a Postgres cluster of
// the bench's own (test/helpers/own-postgres.ts: a transaction that holds delivery back holds it back
// on its whole cluster, so never the machine's shared one; REDIS_URL optional). Two instances
// (bench/live-serve.ts: logs at info, as `npm start`); subscribers on B hold event streams
// (bench/sse-subscribers.ts); latency is from a write's HTTP acknowledgement to each subscriber's receipt.
//   1. layouts: rooms are renamed RATE times a second (8 rooms in turn, so no row is a hot spot),
//      alternately through A and B (so half the events cross instances), for SECONDS; in the loaded phase LAYOUTS loops run force-directed
//      layouts of 1,000-tile rooms on both instances meanwhile. Goal: delivery p99 with layouts
//      ≤ 1.5× without, medians over ROUNDS rounds (each round runs both phases back to back).
//   2. pruning: WRITERS closed-loop writers rename the rooms as fast as they are answered, for
//      SECONDS; events delivered per second with a backlog of BACKLOG expired events being pruned
//      (both instances asked to prune at once: one holds the lock) against none; and, for scale, the
//      same backlog deleted the way pruning used to work (one transaction).
//   3. bursts (issue 37 item 1): the renames of 1. while BURSTS bursts commit, spread over SECONDS,
//      alternately on A and B: each one transaction of BURST_EVENTS `spark:updated` events of
//      BURST_BYTES in one of the watched rooms, so every stream gets every burst (10 × 1 MB by
//      default). Goals: no stream ended, every burst event and rename delivered, rename p99 with
//      bursts ≤ 1.5× without. The issue's run: BENCH_SUBSCRIBERS=1000 BENCH_SCENARIOS=bursts.
// Options (environment): BENCH_ROUNDS (3), BENCH_SECONDS (8), BENCH_RATE (40), BENCH_SUBSCRIBERS (20),
// BENCH_LAYOUTS (2), BENCH_WRITERS (8), BENCH_BACKLOG (200000), BENCH_SCENARIOS (layouts,pruning,bursts),
// BENCH_BURSTS (10), BENCH_BURST_EVENTS (100), BENCH_BURST_BYTES (10000),
// BENCH_SAMPLE (1: print what pg_stat_activity shows during each window), BENCH_LOG_LEVEL (info), BENCH_ALGORITHM (force-directed; `grid` computes in no time, leaving the writes).
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { BENCH_JWT_SECRET, buildDist, positiveEnv, reapOnExit } from './harness.js'
import { newId } from '../src/infra/ids.js'
import { startOwnPostgres } from '../test/helpers/own-postgres.js'

const ROUNDS = positiveEnv('BENCH_ROUNDS', 3)
const SECONDS = positiveEnv('BENCH_SECONDS', 8)
const RATE = positiveEnv('BENCH_RATE', 40)
const SUBSCRIBERS = positiveEnv('BENCH_SUBSCRIBERS', 20)
const LAYOUTS = positiveEnv('BENCH_LAYOUTS', 2)
const WRITERS = positiveEnv('BENCH_WRITERS', 8)
const BACKLOG = positiveEnv('BENCH_BACKLOG', 200_000)
const BURSTS = positiveEnv('BENCH_BURSTS', 10)
const BURST_EVENTS = positiveEnv('BENCH_BURST_EVENTS', 100)
const BURST_BYTES = positiveEnv('BENCH_BURST_BYTES', 10_000)
const SCENARIOS = new Set((process.env.BENCH_SCENARIOS ?? 'layouts,pruning,bursts').split(','))
const ALGORITHM = process.env.BENCH_ALGORITHM ?? 'force-directed'
const TILES = 1000
/** Rooms the writes take turns renaming (every subscriber's user is a member of each). */
const ROOMS = 8
const STREAMS_PER_USER = 5

const now = (): number => performance.timeOrigin + performance.now()
const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }
const load = (): string => loadavg().map((l) => l.toFixed(1)).join(' / ')
const fixed = (n: number): string => Number.isFinite(n) ? n.toFixed(1).padStart(7) : '    n/a'
const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length / 2
  return sorted.length % 2 === 1 ? sorted[Math.floor(middle)] ?? Number.NaN : ((sorted[middle - 1] ?? Number.NaN) + (sorted[middle] ?? Number.NaN)) / 2
}

interface Instance { url: string, dataDir: string, child: ChildProcess }

/** The `n`th client address of a block of 10.9.x.y addresses starting at 10.9.`from`.1 (250 per /24). */
const address = (from: number, n: number): string => `10.9.${from + Math.floor(n / 250)}.${(n % 250) + 1}`

function spawnScript (file: string, extra: Record<string, string>): ChildProcess {
  return reapOnExit(spawn(process.execPath, ['--import=tsx', join(import.meta.dirname, file)], {
    env: { ...process.env, ...extra },
    stdio: ['ignore', 'pipe', 'inherit', 'ipc']
  }))
}

async function listening (child: ChildProcess): Promise<string> {
  return await new Promise((resolve, reject) => {
    let out = ''
    // Read for as long as the child runs: its log lines go here, as to a log collector.
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const match = /^listening (\S+)/m.exec(out)
      if (match?.[1] !== undefined) resolve(match[1])
      if (out.length > 100_000) out = out.slice(-1000)
    })
    child.once('exit', (code) => { reject(new Error(`exited with ${String(code)}`)) })
  })
}

async function startInstance (databaseUrl: string): Promise<Instance> {
  const dataDir = mkdtempSync(join(tmpdir(), 'canvas-bench-live-'))
  const child = spawnScript('live-serve.ts', { NODE_ENV: 'production', JWT_SECRET: BENCH_JWT_SECRET, DATA_DIR: dataDir, DATABASE_URL: databaseUrl, TRUST_PROXY: '127.0.0.1', LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info' })
  return { url: await listening(child), dataDir, child }
}

async function ask<T> (child: ChildProcess, message: object): Promise<T> {
  const reply = new Promise<T>((resolve) => { child.once('message', (m) => { resolve(m as T) }) })
  child.send(message)
  return await reply
}

/** Signs a user in through the mailed link (read from the instance's outbox); returns the cookie. */
async function signIn (target: Instance, email: string, ip: string): Promise<string> {
  const headers = { 'content-type': 'application/json', 'x-forwarded-for': ip }
  const requested = await fetch(`${target.url}/api/auth/request-login`, { method: 'POST', headers, body: JSON.stringify({ email }) })
  if (!requested.ok) throw new Error(`request-login: ${requested.status}`)
  const outbox = join(target.dataDir, 'outbox')
  const mail = readdirSync(outbox).sort().map((f) => JSON.parse(readFileSync(join(outbox, f), 'utf8')) as { to: string, text: string }).filter((m) => m.to === email).at(-1)
  const token = /token=([A-Za-z0-9_-]+)/.exec(mail?.text ?? '')?.[1]
  const authorized = await fetch(`${target.url}/api/auth/authorize?token=${token ?? ''}`, { redirect: 'manual', headers })
  const cookie = /app_session=([^;]+)/.exec(authorized.headers.get('set-cookie') ?? '')?.[1]
  if (cookie === undefined) throw new Error(`authorize: ${authorized.status}`)
  return cookie
}

async function call (url: string, method: string, cookie: string, body?: object): Promise<{ status: number, ok: boolean, text: string }> {
  const res = await fetch(url, { method, headers: { 'content-type': 'application/json', cookie: `app_session=${cookie}` }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
  return { status: res.status, ok: res.ok, text: await res.text() }
}

const idOf = (reply: { text: string }): string => (JSON.parse(reply.text) as { data: { id: string } }).data.id

interface Report { received: number, p50: number, p99: number, max: number }
interface Window extends Report { acks: number, expected: number, failures: number, seconds: number, bursts?: number, ended?: number }

/** Waits until every expected message (marker, or burst event) arrived, or none arrived for 3 s (those count as lost). */
async function settle (subscribers: ChildProcess, expected: number, count: 'received' | 'bursts' = 'received'): Promise<void> {
  let last = -1
  let still = now()
  for (;;) {
    const counts = await ask<{ received: number, bursts: number }>(subscribers, { cmd: 'received' })
    const received = counts[count]
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

let nextSeq = 1

/**
 * Writes for SECONDS: open loop at `rate` a second, or closed loop with `writers` concurrent writers
 * (each writes again when answered); every acknowledgement's time is recorded.
 */
async function drive (write: (seq: number) => Promise<boolean>, mode: { rate: number } | { writers: number }): Promise<{ acks: Array<[number, number]>, failures: number, seconds: number }> {
  const acks: Array<[number, number]> = []
  let failures = 0
  const start = now()
  const end = start + SECONDS * 1000
  const one = async (): Promise<void> => {
    const seq = nextSeq++
    try {
      if (await write(seq)) acks.push([seq, now()])
      else failures++
    } catch {
      failures++
    }
  }
  if ('rate' in mode) {
    const pending: Array<Promise<void>> = []
    for (let i = 0; start + i * 1000 / mode.rate < end; i++) {
      const wait = start + i * 1000 / mode.rate - now()
      if (wait >= 1) await sleep(wait)
      pending.push(one())
    }
    await Promise.all(pending)
  } else {
    await Promise.all(Array.from({ length: mode.writers }, async () => { while (now() < end) await one() }))
  }
  return { acks, failures, seconds: (now() - start) / 1000 }
}

/**
 * What holds delivery back, sampled every 50 ms from pg_stat_activity while a window runs: the age
 * of the oldest open transaction that has an id (every event written after it began waits for it),
 * and what the backends wait on.
 */
function sampleBackends (db: pg.Client): { stop (): Promise<string> } {
  const ages: number[] = []
  const waits = new Map<string, number>()
  let samples = 0
  const state = { running: true }
  const loop = (async () => {
    while (state.running) {
      const rows = (await db.query<{ age_ms: number | null, waits: string | null }>(`
        select (select extract(epoch from clock_timestamp() - min(xact_start)) * 1000 from pg_stat_activity where backend_xid is not null and pid <> pg_backend_pid())::float8 as age_ms,
          (select string_agg(coalesce(wait_event_type || ':' || wait_event, state), ',') from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and state = 'active') as waits`)).rows[0]
      samples++
      if (rows?.age_ms !== null && rows?.age_ms !== undefined) ages.push(rows.age_ms)
      for (const wait of (rows?.waits ?? '').split(',').filter((w) => w !== '')) waits.set(wait, (waits.get(wait) ?? 0) + 1)
      await sleep(50)
    }
  })()
  return {
    async stop () {
      state.running = false
      await loop
      const sorted = [...ages].sort((x, y) => x - y)
      const top = [...waits].sort((x, y) => y[1] - x[1]).slice(0, 5).map(([w, n]) => `${w} ${(n / samples).toFixed(1)}`).join(', ')
      return `oldest transaction with an id: in ${(100 * ages.length / Math.max(1, samples)).toFixed(0)} % of ${samples} samples, median ${median(sorted).toFixed(0)} ms, max ${(sorted[sorted.length - 1] ?? 0).toFixed(0)} ms; active backends per sample: ${top}`
    }
  }
}

let sampler: pg.Client | undefined

/** `alongside`: more to wait for once the writes are done (bursts), before the report resets the counts. */
async function measure (subscribers: ChildProcess, write: (seq: number) => Promise<boolean>, mode: { rate: number } | { writers: number }, alongside?: () => Promise<void>): Promise<Window> {
  const sampling = sampler === undefined ? undefined : sampleBackends(sampler)
  const driven = await drive(write, mode)
  if (sampling !== undefined) console.log(`    ${await sampling.stop()}`)
  const expected = driven.acks.length * SUBSCRIBERS
  await settle(subscribers, expected)
  await alongside?.()
  const counts = await ask<{ bursts: number, ended: number }>(subscribers, { cmd: 'received' })
  const report = await ask<Report>(subscribers, { cmd: 'report', acks: driven.acks })
  return { ...report, acks: driven.acks.length, expected, failures: driven.failures, seconds: driven.seconds, bursts: counts.bursts, ended: counts.ended }
}

function line (label: string, w: Window): string {
  const lost = w.expected - w.received
  return `  ${label.padEnd(40)} p50 ${fixed(w.p50)} ms   p99 ${fixed(w.p99)} ms   max ${fixed(w.max)} ms   ` +
    `${(w.acks / w.seconds).toFixed(0)} writes/s, ${(w.received / w.seconds).toFixed(0)} deliveries/s` +
    `${lost === 0 ? '' : `   LOST ${lost}`}${w.failures > 0 ? `   (${w.failures} writes failed)` : ''}   load ${load()}`
}

async function main (): Promise<void> {
  buildDist()
  const cluster = await startOwnPostgres()
  await cluster.query('create database canvas')
  const databaseUrl = cluster.urlFor({ database: 'canvas' })
  console.log(`database: Postgres (own cluster), cache: ${process.env.REDIS_URL === undefined ? 'memory' : 'Redis'}, service logs at ${process.env.BENCH_LOG_LEVEL ?? 'info'}; load average ${load()}`)
  const a = await startInstance(databaseUrl)
  const b = await startInstance(databaseUrl)
  const db = new pg.Client({ connectionString: databaseUrl })
  await db.connect()
  if (process.env.BENCH_SAMPLE === '1') {
    sampler = new pg.Client({ connectionString: databaseUrl })
    await sampler.connect()
  }

  const owner = await signIn(a, `live-owner-${Date.now()}@bench.test`, '10.9.0.1')
  const ownerId = idOf(await call(`${a.url}/api/auth/me`, 'GET', owner))
  // The watched rooms: renames take turns among them, so no one room row is a hot spot of its own.
  const roomIds = await Promise.all(Array.from({ length: ROOMS }, async () => idOf(await call(`${a.url}/api/rooms`, 'POST', owner, { name: 'seq-0', isPublic: true }))))
  const watchers = await Promise.all(Array.from({ length: Math.ceil(SUBSCRIBERS / STREAMS_PER_USER) }, async (_, i) => await signIn(a, `live-watcher-${Date.now()}-${i}@bench.test`, address(1, i))))
  for (const cookie of watchers) for (const roomId of roomIds) await call(`${b.url}/api/canvas/state?roomId=${roomId}`, 'GET', cookie)

  // Full rooms for the layouts, written straight to the table as the create operation writes them.
  const layoutRooms: string[] = []
  for (let i = 0; i < LAYOUTS * 2; i++) {
    const id = idOf(await call(`${a.url}/api/rooms`, 'POST', owner, { name: `layouts ${i}`, isPublic: false }))
    await db.query(`insert into sparks (id, room_id, title, content, x, y, created_by, created_at, updated_at)
      select $1 || n, $2, 'tile ' || n, '', (n % 40) * 7, (n / 40) * 3, $3, now(), now() from generate_series(1, ${TILES}) as n`, [newId('spark') + '_', id, ownerId])
    layoutRooms.push(id)
  }

  const subscribers = spawnScript('sse-subscribers.ts', {})
  const targets = Array.from({ length: SUBSCRIBERS }, (_, k) => ({
    url: `${b.url}/api/sync/subscribe`,
    headers: { cookie: `app_session=${watchers[Math.floor(k / STREAMS_PER_USER)] ?? ''}`, 'x-forwarded-for': address(16, k) }
  }))
  const opened = await ask<{ opened: number, failed: number }>(subscribers, { cmd: 'open', targets })
  if (opened.failed > 0) throw new Error(`could not open every stream: ${JSON.stringify(opened)}`)
  const rename = async (seq: number): Promise<boolean> => (await call(`${(seq % 2 === 0 ? a : b).url}/api/rooms/${roomIds[seq % ROOMS] ?? ''}`, 'PATCH', owner, { name: `seq-${seq}` })).ok
  // Warm-up (JIT, pools, keep-alive), not counted.
  await measure(subscribers, rename, { rate: RATE })
  console.log(`${SUBSCRIBERS} streams on B; ${ROUNDS} round(s) of ${SECONDS} s`)

  if (SCENARIOS.has('layouts')) {
    console.log(`\n1. Delivery while ${ALGORITHM} layouts of ${TILES} tiles run (${LAYOUTS} loop(s) on each instance), ${RATE} renames/s alternately through A and B`)
    const quiet: Window[] = []
    const busy: Window[] = []
    for (let round = 1; round <= ROUNDS; round++) {
      quiet.push(await measure(subscribers, rename, { rate: RATE }))
      console.log(line(`round ${round}, without layouts`, quiet[quiet.length - 1] as Window))
      const layouts = { running: true }
      const outcomes: number[] = []
      const loops = layoutRooms.map(async (layoutRoom, i) => {
        const via = i % 2 === 0 ? a : b
        while (layouts.running) outcomes.push((await call(`${via.url}/api/canvas/layout/compute`, 'POST', owner, { roomId: layoutRoom, algorithm: ALGORITHM })).status)
      })
      await sleep(300) // the first layouts are under way
      busy.push(await measure(subscribers, rename, { rate: RATE }))
      layouts.running = false
      await Promise.all(loops)
      const ok = outcomes.filter((s) => s === 200).length
      console.log(line(`round ${round}, with layouts`, busy[busy.length - 1] as Window) + `   (${ok} layouts done${ok === outcomes.length ? '' : `, statuses ${JSON.stringify(outcomes.filter((s) => s !== 200))}`})`)
    }
    const quietP99 = median(quiet.map((w) => w.p99))
    const busyP99 = median(busy.map((w) => w.p99))
    console.log(`  median p99: without ${quietP99.toFixed(1)} ms, with layouts ${busyP99.toFixed(1)} ms → ${(busyP99 / quietP99).toFixed(2)}× (goal ≤ 1.5×); ` +
      `median p50 ${median(quiet.map((w) => w.p50)).toFixed(1)} / ${median(busy.map((w) => w.p50)).toFixed(1)} ms`)
  }

  if (SCENARIOS.has('pruning')) {
    console.log(`\n2. Delivery while the event log is pruned of ${BACKLOG} expired events, ${WRITERS} closed-loop writers`)
    const seedBacklog = async (): Promise<void> => {
      // Expired events at the head of the log (an ancient transaction), long since delivered.
      await db.query(`insert into event_log (tx, type, payload, audience, user_id, created_at)
        select '3'::xid8, 'room:updated', jsonb_build_object('name', 'expired ' || n), '{"kind":"users","userIds":["user_nobody"]}'::jsonb, null, now() - interval '25 hours'
        from generate_series(1, ${BACKLOG}) as n`)
      await db.query('vacuum analyze event_log')
    }
    const without: Window[] = []
    const pruning: Window[] = []
    const oneTransaction: Window[] = []
    for (let round = 1; round <= ROUNDS; round++) {
      without.push(await measure(subscribers, rename, { writers: WRITERS }))
      console.log(line(`round ${round}, no pruning`, without[without.length - 1] as Window))

      await seedBacklog()
      const prunes = Promise.all([ask<{ removed: number, ms: number }>(a.child, { cmd: 'prune' }), ask<{ removed: number, ms: number }>(b.child, { cmd: 'prune' })])
      pruning.push(await measure(subscribers, rename, { writers: WRITERS }))
      const [byA, byB] = await prunes
      console.log(line(`round ${round}, pruning in batches`, pruning[pruning.length - 1] as Window) +
        `   (A removed ${byA.removed} in ${(byA.ms / 1000).toFixed(1)} s, B ${byB.removed} in ${(byB.ms / 1000).toFixed(1)} s)`)
      await db.query('delete from event_log where tx = \'3\'::xid8') // whatever a short run left

      await seedBacklog()
      const started = now()
      const deleting = db.query('delete from event_log where tx = \'3\'::xid8').then(() => now() - started)
      oneTransaction.push(await measure(subscribers, rename, { writers: WRITERS }))
      console.log(line(`round ${round}, one-transaction delete`, oneTransaction[oneTransaction.length - 1] as Window) + `   (took ${((await deleting) / 1000).toFixed(1)} s)`)
    }
    const rate = (windows: Window[]): number => median(windows.map((w) => w.received / w.seconds))
    console.log(`  median deliveries/s: no pruning ${rate(without).toFixed(0)}, pruning in batches ${rate(pruning).toFixed(0)} (${(rate(pruning) / rate(without)).toFixed(2)}×), ` +
      `one-transaction delete ${rate(oneTransaction).toFixed(0)} (${(rate(oneTransaction) / rate(without)).toFixed(2)}×)`)
    console.log(`  median p99: ${median(without.map((w) => w.p99)).toFixed(1)} / ${median(pruning.map((w) => w.p99)).toFixed(1)} / ${median(oneTransaction.map((w) => w.p99)).toFixed(1)} ms`)
  }

  if (SCENARIOS.has('bursts')) {
    console.log(`\n3. Delivery of ${RATE} renames/s while ${BURSTS} bursts of ${BURST_EVENTS} events × ${BURST_BYTES} bytes commit (each to all ${SUBSCRIBERS} streams), alternately on A and B`)
    const spark = JSON.parse((await call(`${a.url}/api/sparks`, 'POST', owner, { roomId: roomIds[0], title: 'burst', content: '', x: 0, y: 0 })).text) as { data: object }
    const quiet: Window[] = []
    const bursting: Window[] = []
    let lost = 0
    let ended = 0
    for (let round = 1; round <= ROUNDS; round++) {
      quiet.push(await measure(subscribers, rename, { rate: RATE }))
      console.log(line(`round ${round}, without bursts`, quiet[quiet.length - 1] as Window))
      const committed: number[] = []
      const bursts = (async () => {
        for (let i = 0; i < BURSTS; i++) {
          await sleep(SECONDS * 1000 / BURSTS / 2)
          const reply = await ask<{ ms: number, error?: string }>((i % 2 === 0 ? a : b).child, { cmd: 'burst', spark: spark.data, userId: ownerId, events: BURST_EVENTS, bytes: BURST_BYTES, tag: `${round}-${i}` })
          if (reply.error !== undefined) throw new Error(`burst: ${reply.error}`)
          committed.push(reply.ms)
          await sleep(SECONDS * 1000 / BURSTS / 2)
        }
      })()
      // The bursts' events land in the same count; a window's report resets it, so it is read first.
      const window = await measure(subscribers, rename, { rate: RATE }, async () => {
        await bursts
        await settle(subscribers, BURSTS * BURST_EVENTS * SUBSCRIBERS, 'bursts')
      })
      bursting.push(window)
      lost += BURSTS * BURST_EVENTS * SUBSCRIBERS - (window.bursts ?? 0)
      ended = window.ended ?? 0
      console.log(line(`round ${round}, with bursts`, window) + `   (burst events delivered ${window.bursts ?? 0} of ${BURSTS * BURST_EVENTS * SUBSCRIBERS}; ` +
        `commits took median ${median(committed).toFixed(0)} ms; streams ended by the server so far: ${ended})`)
    }
    const quietP99 = median(quiet.map((w) => w.p99))
    const burstP99 = median(bursting.map((w) => w.p99))
    console.log(`  median p99: without ${quietP99.toFixed(1)} ms, with bursts ${burstP99.toFixed(1)} ms → ${(burstP99 / quietP99).toFixed(2)}× (goal ≤ 1.5×); ` +
      `streams ended ${ended} (goal 0); burst events lost ${lost}, renames lost ${bursting.reduce((sum, w) => sum + w.expected - w.received, 0)} (goal 0)`)
  }

  await ask(subscribers, { cmd: 'close' })
  subscribers.kill()
  await db.end()
  await sampler?.end()
  for (const instance of [a, b]) {
    const exited = new Promise((resolve) => instance.child.once('exit', resolve))
    instance.child.kill('SIGTERM')
    await exited
  }
  await cluster.destroy()
}

await main()
