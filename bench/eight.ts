// `DATABASE_URL=postgres://… [REDIS_URL=redis://…] npx tsx bench/eight.ts`: past one machine
// (issue 40 item 3). Several instances (8 by default) behind nginx, one Postgres reached through a
// PgBouncer of this benchmark's own (pool_mode = transaction; LISTEN and migrations on
// DATABASE_DIRECT_URL, which is DATABASE_URL itself), one Redis; every process started here and
// stopped at the end. Measured:
//   1. one instance alone behind nginx, with its share of the streams (streams ÷ instances):
//      event-producing writes/s from closed-loop writers (spark retitles in a room nobody streams),
//      the baseline;
//   2. every instance, the streams spread over them through nginx, writes through nginx too (so on
//      every instance) at an offered rate: cross-instance delivery p50/p99, lost and duplicated
//      events (goal 0 and 0);
//   3. every instance, the same closed-loop writes as 1 with as many writers per instance:
//      writes/s against instances × the baseline (goal ≥ 0.8× until Postgres CPU is the limit).
// Throughout 2 and 3: the Postgres backends of the database, most seen at once (goal ≤ the pool
// plus a LISTEN and a health probe per instance, whatever the instance count), and the CPU of Postgres (this
// database's backends, from /proc: Postgres must run on this machine), PgBouncer and the instances.
// Options: --instances 8 --streams 2000 --rate 20 --seconds 10 --writers 4 --throughput-seconds 10
//          --pool 20 (PgBouncer's default_pool_size); --direct: no PgBouncer, every instance straight
//          to Postgres (the comparison). Small: --instances 2 --streams 100 --seconds 3
//          --throughput-seconds 3. The service logs at `info` unless LOG_LEVEL says otherwise.
import { cpus } from 'node:os'
import pg from 'pg'
import { buildDist, processCpuSeconds } from './harness.js'
import { ask, clientIp, fixed, line, measure, now, openAll, signInMany, sleep, spawnScript, startNginx, startService, type Service } from './live-cluster.js'
import { startOwnPgBouncer } from '../test/helpers/own-pgbouncer.js'

const option = (name: string, fallback: number): number => {
  const at = process.argv.indexOf(`--${name}`)
  const value = at === -1 ? undefined : Number(process.argv[at + 1])
  return value === undefined || !Number.isFinite(value) || value <= 0 ? fallback : value
}
const INSTANCES = option('instances', 8)
const STREAMS = option('streams', 2000)
const RATE = option('rate', 20)
const SECONDS = option('seconds', 10)
const WRITERS = option('writers', 4)
const THROUGHPUT_SECONDS = option('throughput-seconds', 10)
const POOL = option('pool', 20)
const DIRECT = process.argv.includes('--direct')
const STREAMS_PER_USER = 5
const STREAMS_PER_IP = 20
/** Sparks the writers retitle in turn, one writer per spark at a time: no row lock queue. */
const SPARKS = 256

const directUrl = process.env.DATABASE_URL
if (directUrl === undefined) {
  console.error('bench/eight.ts needs DATABASE_URL (Postgres; PgBouncer is started in front of it here)')
  process.exit(2)
}

buildDist()
const bouncer = DIRECT ? undefined : await startOwnPgBouncer(directUrl, { poolSize: POOL, maxClients: 100 + INSTANCES * 20 })
const database = new URL(directUrl).pathname.slice(1)
console.log(`${INSTANCES} instances, ${bouncer === undefined ? 'straight to' : `PgBouncer (transaction pooling, ${POOL} server connections) in front of`} Postgres "${database}", ` +
  `${process.env.REDIS_URL === undefined ? 'no Redis (per-instance counts)' : 'one Redis'}; ${cpus().length} cores here`)
const serviceEnv = { DATABASE_URL: bouncer?.url ?? directUrl, DATABASE_DIRECT_URL: directUrl, TRUST_PROXY: '127.0.0.1' }
const first = await startService(serviceEnv)
let subscribers = spawnScript('sse-subscribers.ts')

const users = Math.ceil(STREAMS / STREAMS_PER_USER)
const [ownerCookie, ...cookies] = await signInMany(first, users + 1, `eight-${Date.now().toString(36)}`)
const owner = { cookie: `app_session=${ownerCookie ?? ''}`, 'content-type': 'application/json' }
async function post<T> (url: string, body: object): Promise<T> {
  const res = await fetch(url, { method: 'POST', headers: owner, body: JSON.stringify(body) })
  if (!res.ok) throw new Error(`POST ${url}: ${res.status} ${await res.text()}`)
  return (await res.json() as { data: T }).data
}
// The streamed room: every bench user is a member, so each write to it reaches every stream.
const streamed = (await post<{ id: string }>(`${first.url}/api/rooms`, { name: 'eight: streamed', isPublic: true })).id
for (let i = 0; i < users; i += 20) {
  await Promise.all(cookies.slice(i, i + 20).map(async (cookie) => {
    const res = await fetch(`${first.url}/api/canvas/state?roomId=${streamed}`, { headers: { cookie: `app_session=${cookie}` } })
    if (!res.ok) throw new Error(`join: ${res.status}`)
  }))
}
// The written room: its events are logged and read by every instance, and reach no stream, so the
// writes/s measure the service and Postgres, not this benchmark's subscriber process.
const quiet = (await post<{ id: string }>(`${first.url}/api/rooms`, { name: 'eight: written', isPublic: false })).id
const sparkIn = async (roomId: string, i: number): Promise<string> => (await post<{ id: string }>(`${first.url}/api/sparks`, { title: 'bench', content: '', roomId, x: (i % 32) * 220, y: Math.floor(i / 32) * 140 })).id
const streamedSparks: string[] = []
const quietSparks: string[] = []
for (let i = 0; i < SPARKS; i++) {
  streamedSparks.push(await sparkIn(streamed, i))
  quietSparks.push(await sparkIn(quiet, i))
}

const targets = (url: string, count: number): Array<{ url: string, headers: Record<string, string> }> =>
  Array.from({ length: count }, (_, k) => ({
    url: `${url}/api/sync/subscribe`,
    headers: { cookie: `app_session=${cookies[Math.floor(k / STREAMS_PER_USER)] ?? ''}`, 'x-forwarded-for': clientIp(Math.floor(k / STREAMS_PER_IP)) }
  }))

async function closeStreams (): Promise<void> {
  await ask(subscribers, { cmd: 'close' })
  subscribers.kill()
  subscribers = spawnScript('sse-subscribers.ts')
  await sleep(1_500) // the instances notice the closed streams and free their slots
}

async function retitle (url: string, sparkId: string, title: string): Promise<Response> {
  const res = await fetch(`${url}/api/sparks/${sparkId}`, { method: 'PATCH', headers: owner, body: JSON.stringify({ title }) })
  await res.arrayBuffer()
  return res
}

/** What Postgres, PgBouncer and the instances do while `run` runs: backends most seen at once, CPU used. */
async function watched<T> (instances: Service[], run: () => Promise<T>): Promise<T & { backends: number, busy: number, seconds: number, postgresCpu: number, bouncerCpu: number, instancesCpu: number }> {
  const inspector = new pg.Client({ connectionString: directUrl })
  await inspector.connect()
  const cpuAtStart = new Map<number, number>()
  let postgresCpu = 0
  let backends = 0
  let busy = 0
  const sample = async (): Promise<void> => {
    const rows = (await inspector.query<{ pid: number, state: string | null }>(
      'select pid, state from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and backend_type = \'client backend\'')).rows
    backends = Math.max(backends, rows.length)
    busy = Math.max(busy, rows.filter((row) => row.state !== 'idle').length)
    let used = 0
    for (const { pid } of rows) {
      const seconds = processCpuSeconds(pid)
      if (Number.isNaN(seconds)) continue
      if (!cpuAtStart.has(pid)) cpuAtStart.set(pid, seconds)
      used += seconds - (cpuAtStart.get(pid) ?? seconds)
    }
    postgresCpu = Math.max(postgresCpu, used)
  }
  const cpuOf = (): { bouncer: number, instances: number } => ({
    bouncer: bouncer === undefined ? 0 : processCpuSeconds(bouncer.pid),
    instances: instances.reduce((sum, instance) => sum + (processCpuSeconds(instance.child.pid) || 0), 0)
  })
  await sample()
  const before = cpuOf()
  const started = now()
  const sampling = { on: true }
  const sampler = (async () => { while (sampling.on) { await sample(); await sleep(100) } })()
  const result = await run()
  const seconds = (now() - started) / 1000
  sampling.on = false
  await sampler
  await sample()
  const after = cpuOf()
  await inspector.end()
  return { ...result, backends, busy, seconds, postgresCpu, bouncerCpu: after.bouncer - before.bouncer, instancesCpu: after.instances - before.instances }
}

/** Closed-loop writers (`writers` at once) retitling the quiet room's sparks through `url` for `seconds`. */
async function throughput (url: string, writers: number, seconds: number): Promise<{ writes: number, failed: number, perSecond: number }> {
  let writes = 0
  let failed = 0
  let seq = 0
  const deadline = now() + seconds * 1000
  const started = now()
  await Promise.all(Array.from({ length: writers }, async (_, w) => {
    for (let k = 0; now() < deadline; k++) {
      try {
        const res = await retitle(url, quietSparks[(w + k * writers) % quietSparks.length] ?? '', `w-${seq++}`)
        if (res.ok) writes++
        else failed++
      } catch {
        failed++
      }
    }
  }))
  return { writes, failed, perSecond: writes / ((now() - started) / 1000) }
}

const cores = cpus().length
const share = (cpu: number, seconds: number): string => `${(cpu / seconds).toFixed(2)} cores (${(100 * cpu / seconds / cores).toFixed(0)} % of ${cores})`
function resources (label: string, r: { backends: number, busy: number, seconds: number, postgresCpu: number, bouncerCpu: number, instancesCpu: number }, instances: number): void {
  const goal = bouncer === undefined ? 'no pooler: each instance its own pools' : `goal ≤ pool ${POOL} + ${instances} LISTEN + ${instances} health probes = ${POOL + 2 * instances}`
  console.log(`  ${label}: Postgres backends of "${database}" at most ${r.backends} (busy at most ${r.busy}); ${goal}`)
  console.log(`    CPU: Postgres (this database's backends) ${share(r.postgresCpu, r.seconds)}, PgBouncer ${share(r.bouncerCpu, r.seconds)} ` +
    `(one thread: 1 core is its ceiling), the ${instances} instance(s) ${share(r.instancesCpu, r.seconds)}`)
}

// 1. One instance alone with its share of the streams, behind nginx as in 3.
const share1 = Math.max(1, Math.round(STREAMS / INSTANCES))
const lbOfOne = await startNginx([new URL(first.url).host])
await openAll(subscribers, targets(lbOfOne.url, share1))
const alone = await watched([first], async () => await throughput(lbOfOne.url, WRITERS, THROUGHPUT_SECONDS))
await closeStreams()
lbOfOne.stop()
console.log(`\n1. One instance, ${share1} streams, ${WRITERS} closed-loop writers, ${THROUGHPUT_SECONDS} s: ${alone.perSecond.toFixed(0)} event-producing writes/s` +
  `${alone.failed > 0 ? ` (${alone.failed} failed)` : ''}`)
resources('one instance', alone, 1)

// 2. Every instance behind nginx: delivery across instances.
const others = await Promise.all(Array.from({ length: INSTANCES - 1 }, async () => await startService(serviceEnv)))
const instances = [first, ...others]
const lb = await startNginx(instances.map((instance) => new URL(instance.url).host))
const spread = await openAll(subscribers, targets(lb.url, STREAMS))
console.log(`\n2. ${INSTANCES} instances behind nginx, ${STREAMS} streams (${Object.values(spread).join(' / ')} per instance), ` +
  `spark retitles through nginx (so on every instance) at ${RATE}/s for ${SECONDS} s`)
const delivery = await watched(instances, async () => await measure(subscribers, STREAMS, RATE, SECONDS, async (seq) => {
  const res = await retitle(lb.url, streamedSparks[seq % streamedSparks.length] ?? '', `seq-${seq}`)
  if (!res.ok) throw new Error(`HTTP ${res.status}`)
  return res.headers.get('x-upstream') ?? true
}))
console.log(line('all deliveries', delivery))
console.log(`    stream on the writer's instance: p50 ${fixed(delivery.same.p50)} ms  p99 ${fixed(delivery.same.p99)} ms (${delivery.same.n});  ` +
  `on another: p50 ${fixed(delivery.cross.p50)} ms  p99 ${fixed(delivery.cross.p99)} ms (${delivery.cross.n})`)
console.log(`    lost ${delivery.expected - delivery.received}, duplicated ${delivery.duplicates} (goal 0 and 0)`)
resources('during delivery', delivery, INSTANCES)

// 3. Every instance: the closed-loop writes of 1, as many writers per instance.
const all = await watched(instances, async () => await throughput(lb.url, WRITERS * INSTANCES, THROUGHPUT_SECONDS))
const scaling = all.perSecond / (INSTANCES * alone.perSecond)
console.log(`\n3. ${INSTANCES} instances, ${WRITERS * INSTANCES} closed-loop writers through nginx, ${THROUGHPUT_SECONDS} s: ${all.perSecond.toFixed(0)} writes/s` +
  `${all.failed > 0 ? ` (${all.failed} failed)` : ''} = ${(all.perSecond / alone.perSecond).toFixed(2)}× one instance → ` +
  `${scaling.toFixed(2)} of per-instance scaling (goal ≥ 0.8 until Postgres CPU is the limit)`)
resources(`${INSTANCES} instances`, all, INSTANCES)

await ask(subscribers, { cmd: 'close' })
subscribers.kill()
lb.stop()
await Promise.all(instances.map(async (instance) => { await instance.stop() }))
await bouncer?.stop()
