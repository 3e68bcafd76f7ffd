// `npx tsx bench/sse.ts`: the live event stream measured next to a bare node:http SSE broadcaster
// (bench/sse-raw.ts) in the same run. Subscribers live in a separate child process
// (bench/sse-subscribers.ts); latency is from the write's acknowledgement (its HTTP response) to the
// message's arrival at a subscriber, over every delivery. Scenarios:
//   1. fan-out: N subscribers of one room, R events/s (a room rename each) — p50/p99 vs raw;
//   2. idle memory: M open streams — resident memory per stream (and per raw connection);
//   3. cross-instance (needs DATABASE_URL): two instances on one Postgres, subscribers on B, writes
//      at each offered rate to B (same instance) and then to A (the other one) — p99 difference, losses;
//   4. load balancer (needs DATABASE_URL): --lb-instances instances on one Postgres (and Redis) behind
//      nginx, started here as a process of its own; streams and writes (spark retitles) both go
//      through it (round robin), so both spread over every instance. Delivery latency split by whether the stream's
//      instance is the one that took the write (nginx names it in `X-Upstream`), losses, duplicates,
//      and what each event cost Postgres: transactions, event_log rows read, wake-up NOTIFYs, backends.
// Options: --subscribers 10000 --rate 2 --seconds 10 --rounds 3 --idle 10000 --cross-subscribers 20
//          --cross-rates 250,1000 --cross-seconds 5 --lb-instances 4 --lb-streams 1000
//          --lb-rates 10,50 --lb-seconds 10 --only fanout,idle,cross,lb
//          (DATABASE_URL / REDIS_URL select Postgres / Redis; the stream caps of 5 per user and 20 per
//          address hold, so streams are spread over users and X-Forwarded-For addresses; the service
//          logs at `info` unless LOG_LEVEL says otherwise).
import type { ChildProcess } from 'node:child_process'
import pg from 'pg'
import { buildDist, processCpuSeconds } from './harness.js'
import { ask, clientIp, fixed, line, listening, measure, now, openAll, signInMany, sleep, spawnScript, startNginx, startService } from './live-cluster.js'

const option = (name: string, fallback: number): number => {
  const at = process.argv.indexOf(`--${name}`)
  const value = at === -1 ? undefined : Number(process.argv[at + 1])
  return value === undefined || !Number.isFinite(value) ? fallback : value
}
const rates = (name: string, fallback: string): number[] =>
  (process.argv.includes(`--${name}`) ? process.argv[process.argv.indexOf(`--${name}`) + 1] ?? '' : fallback).split(',').map(Number).filter((n) => n > 0)
const SUBSCRIBERS = option('subscribers', 10_000)
const RATE = option('rate', 2)
const SECONDS = option('seconds', 10)
const IDLE = option('idle', 10_000)
const CROSS_SUBSCRIBERS = option('cross-subscribers', 20)
const CROSS_RATES = rates('cross-rates', '250,1000')
const CROSS_SECONDS = option('cross-seconds', 5)
const LB_INSTANCES = option('lb-instances', 4)
const LB_STREAMS = option('lb-streams', 1000)
const LB_RATES = rates('lb-rates', '10,50')
const LB_SECONDS = option('lb-seconds', 10)
const ROUNDS = option('rounds', 3)
const SCENARIOS = new Set((process.argv[process.argv.indexOf('--only') + 1] ?? '').split(',').filter((x) => process.argv.includes('--only') && x !== ''))
const runs = (name: string): boolean => SCENARIOS.size === 0 || SCENARIOS.has(name)
const STREAMS_PER_USER = 5
const STREAMS_PER_IP = 20

/** Resident size of a target (the service, or the raw broadcaster) after full collections, and the part of it that is V8's heap and external memory, in KB. */
async function memoryAfterGcKb (child: ChildProcess): Promise<{ rss: number, heap: number }> {
  const { rss, heap } = await ask<{ rss: number, heap: number }>(child, { cmd: 'rss' })
  return { rss: rss / 1024, heap: heap / 1024 }
}

const database = process.env.DATABASE_URL === undefined ? 'PGlite (embedded)' : 'Postgres'
buildDist()
console.log(`database: ${database}, cache: ${process.env.REDIS_URL === undefined ? 'memory' : 'Redis'}`)
const serviceEnv = { TRUST_PROXY: '127.0.0.1' }
const service = await startService(serviceEnv)
const rawChild = spawnScript('sse-raw.ts', {}, ['--expose-gc'])
const rawUrl = await listening(rawChild)
let subscribers = spawnScript('sse-subscribers.ts')

const userCount = Math.ceil(Math.max(SUBSCRIBERS, IDLE, CROSS_SUBSCRIBERS, LB_STREAMS) / STREAMS_PER_USER)
const signInStarted = now()
const [ownerCookie, ...cookies] = await signInMany(service, userCount + 1, 'sse')
console.log(`signed in ${userCount + 1} users in ${((now() - signInStarted) / 1000).toFixed(1)} s`)
const owner = { cookie: `app_session=${ownerCookie ?? ''}`, 'content-type': 'application/json' }
const room = await (await fetch(`${service.url}/api/rooms`, { method: 'POST', headers: owner, body: JSON.stringify({ name: 'bench', isPublic: true }) })).json() as { data: { id: string } }
const roomId = room.data.id
const members = Math.ceil(Math.max(SUBSCRIBERS, CROSS_SUBSCRIBERS, LB_STREAMS) / STREAMS_PER_USER)
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
  await sleep(1_500) // the service notices the closed streams and frees their slots (thousands of them)
}

// Same-size messages for the raw broadcaster: the service's envelope of a renamed room.
const sample = { id: roomId, name: 'seq-0', isPublic: true, createdBy: 'user_xxxxxxxxxxxxxxxxxxxxxx', createdAt: new Date().toISOString(), updatedAt: new Date().toISOString() }
const rename = (url: string) => async (seq: number): Promise<boolean | string> => {
  const res = await fetch(`${url}/api/rooms/${roomId}`, { method: 'PATCH', headers: owner, body: JSON.stringify({ name: `seq-${seq}` }) })
  await res.arrayBuffer()
  if (!res.ok) throw new Error(`HTTP ${res.status}`)
  return res.headers.get('x-upstream') ?? true
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
  const idleBefore = await memoryAfterGcKb(service.child)
  await openAll(subscribers, serviceTargets(service.url, IDLE))
  await sleep(3_000)
  const idleAfter = await memoryAfterGcKb(service.child)
  await freshSubscribers()
  const rawBefore = await memoryAfterGcKb(rawChild)
  await openAll(subscribers, rawTargets(IDLE))
  await sleep(3_000)
  const rawAfter = await memoryAfterGcKb(rawChild)
  await freshSubscribers()
  console.log(`\n2. Idle streams: ${IDLE} open`)
  const perStream = (after: { rss: number, heap: number }, before: { rss: number, heap: number }): string =>
    `+${((after.rss - before.rss) / 1024).toFixed(1)} MB resident → ${((after.rss - before.rss) / IDLE).toFixed(1)} KB each, of which V8 heap and external ${((after.heap - before.heap) / IDLE).toFixed(1)} KB`
  console.log(`  service: ${perStream(idleAfter, idleBefore)} per stream (goal ≤ 10 KB)`)
  console.log(`  raw node:http: ${perStream(rawAfter, rawBefore)} per connection (both after full collections)`)
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

// 4. Several instances behind a real load balancer (nginx), on one Postgres and one Redis.

/**
 * This database's counters in Postgres's statistics, the live channel's wake-ups heard by a listener
 * of its own, and CPU seconds used so far by this database's backends (from /proc: Postgres runs on
 * this machine) and by the `instances` processes.
 */
async function postgresCounters (databaseUrl: string, instances: Array<number | undefined>): Promise<{ read (): Promise<Record<string, number>>, close (): Promise<void> }> {
  const client = new pg.Client({ connectionString: databaseUrl })
  const listener = new pg.Client({ connectionString: databaseUrl })
  await Promise.all([client.connect(), listener.connect()])
  let wakeUps = 0
  let notifications = 0
  listener.on('notification', (n) => {
    notifications++
    if (n.payload?.startsWith('e:') === true) wakeUps++
  })
  await listener.query('listen canvas_live')
  /** Backends seen so far with the CPU they had used when first seen (they live as long as their pools). */
  const backendsAtStart = new Map<number, number>()
  return {
    async read () {
      // Statistics are sent to the collector when a backend's transaction ends: give them a moment.
      await client.query('select pg_stat_clear_snapshot()')
      const row = (await client.query<{ transactions: string, event_rows: string, newest: string, backends: string }>(`
        select (select xact_commit + xact_rollback from pg_stat_database where datname = current_database()) as transactions,
          (select coalesce(idx_tup_fetch, 0) + coalesce(seq_tup_read, 0) from pg_stat_user_tables where relname = 'event_log') as event_rows,
          (select coalesce(max(id), 0) from event_log) as newest,
          (select count(*) from pg_stat_activity where datname = current_database()) as backends`)).rows[0]
      const pids = (await client.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database()')).rows.map((r) => r.pid)
      let postgresCpu = 0
      for (const pid of pids) {
        const used = processCpuSeconds(pid)
        if (Number.isNaN(used)) continue
        if (!backendsAtStart.has(pid)) backendsAtStart.set(pid, used)
        postgresCpu += used - (backendsAtStart.get(pid) ?? used)
      }
      let instancesCpu = 0
      for (const pid of instances) instancesCpu += processCpuSeconds(pid) || 0
      return { transactions: Number(row?.transactions), eventRows: Number(row?.event_rows), events: Number(row?.newest), backends: Number(row?.backends), wakeUps, notifications, postgresCpu, instancesCpu }
    },
    async close () { await Promise.all([client.end(), listener.end()]) }
  }
}

if (!runs('lb')) {
  // not asked for
} else if (process.env.DATABASE_URL !== undefined) {
  const others = await Promise.all(Array.from({ length: LB_INSTANCES - 1 }, async () => await startService(serviceEnv)))
  const instances = [service, ...others]
  const lb = await startNginx(instances.map((i) => new URL(i.url).host))
  const spread = await openAll(subscribers, serviceTargets(lb.url, LB_STREAMS))
  console.log(`\n4. ${LB_INSTANCES} instances behind nginx (round robin), one Postgres, ${process.env.REDIS_URL === undefined ? 'no Redis' : 'one Redis'}; ` +
    `${LB_STREAMS} streams through it (${Object.values(spread).join(' / ')} per instance), writes through it too, ${LB_SECONDS} s per offered rate`)
  // Writes retitle sparks of the room in turn, not the room itself: writes to one row wait for each
  // other's row lock, which would measure that queue rather than delivery.
  const sparks: string[] = []
  for (let i = 0; i < 64; i++) {
    const res = await fetch(`${service.url}/api/sparks`, { method: 'POST', headers: owner, body: JSON.stringify({ title: 'bench', content: '', roomId, x: i * 220, y: 0 }) })
    sparks.push((await res.json() as { data: { id: string } }).data.id)
  }
  const retitle = async (seq: number): Promise<boolean | string> => {
    const res = await fetch(`${lb.url}/api/sparks/${sparks[seq % sparks.length] ?? ''}`, { method: 'PATCH', headers: owner, body: JSON.stringify({ title: `seq-${seq}` }) })
    await res.arrayBuffer()
    if (!res.ok) throw new Error(`HTTP ${res.status}`)
    return res.headers.get('x-upstream') ?? true
  }
  const counters = await postgresCounters(process.env.DATABASE_URL, instances.map((i) => i.child.pid))
  await sleep(1_000)
  const idle = await counters.read()
  console.log(`  Postgres backends of this database with every instance idle: ${idle.backends - 2} (2 more are this benchmark's)`)
  for (const rate of LB_RATES) {
    const before = await counters.read()
    const r = await measure(subscribers, LB_STREAMS, rate, LB_SECONDS, retitle)
    await sleep(1_500)
    const after = await counters.read()
    const events = after.events - before.events
    const per = (value: number): string => (value / events).toFixed(2)
    console.log(`  offered ${rate} events/s:`)
    console.log(line('  all deliveries', r))
    console.log(`    stream on the writer's instance: p50 ${fixed(r.same.p50)} ms  p99 ${fixed(r.same.p99)} ms (${r.same.n});  on another: p50 ${fixed(r.cross.p50)} ms  p99 ${fixed(r.cross.p99)} ms (${r.cross.n})`)
    console.log(`    lost ${r.expected - r.received}, duplicated ${r.duplicates} (goal 0 and 0)`)
    console.log(`    per event (${events} written, warm-up included): Postgres transactions ${per(after.transactions - before.transactions)}, ` +
      `event_log rows read ${per(after.eventRows - before.eventRows)} (${per((after.eventRows - before.eventRows) / LB_INSTANCES)} per instance), ` +
      `wake-up NOTIFYs ${per(after.wakeUps - before.wakeUps)} (all NOTIFYs ${per(after.notifications - before.notifications)}); backends ${after.backends - 2}; ` +
      `CPU ms: Postgres (this database's backends) ${per(1000 * (after.postgresCpu - before.postgresCpu))}, the ${LB_INSTANCES} instances ${per(1000 * (after.instancesCpu - before.instancesCpu))}`)
  }
  await counters.close()
  await freshSubscribers()
  lb.stop()
  await Promise.all(others.map(async (other) => { await other.stop() }))
} else {
  console.log('\n4. Load balancer: skipped (set DATABASE_URL to run several instances on one Postgres)')
}

await ask(subscribers, { cmd: 'close' })
subscribers.kill()
rawChild.kill('SIGTERM')
await service.stop()
