// `npx tsx bench/event-writes.ts` (issue 18): event-producing writes per second, the service against
// the same row update issued by a bare `pg` client in the same run, and what writing the event costs
// a write at the SQL level. Seeds 100 rooms of 10 tiles (1,000) through the REST API, then measures,
// each scenario once per round, rounds one after another (this machine is shared: figures drift by
// tens of percent between minutes, so ratios are medians of same-round ratios):
//   1. bare pg: BENCH_CONNECTIONS connections, each looping `begin; update sparks …; commit` over the tiles;
//   2. bare pg + event: the same with the service's event_log insert in the transaction;
//   3. the service, one instance: autocannon, `PATCH /api/canvas/position` over the same tiles;
//   4. two instances on the same Postgres (and Redis), half the connections to each, at once;
//   5. during 4: delivery of a probe tile's moves to a subscriber on B, written through A (across
//      instances) and through B (same instance): arrival minus the write's HTTP acknowledgement.
// Needs DATABASE_URL; REDIS_URL optional. BENCH_ROUNDS (3), BENCH_SECONDS (5), BENCH_CONNECTIONS (50),
// BENCH_SCENARIOS (a comma list of bare, bare-event, service, service2; all by default, e.g. `service`
// alone to profile it with BENCH_NODE_ARGS='--cpu-prof --cpu-prof-dir=prof').
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { request, type ClientRequest } from 'node:http'
import { availableParallelism, loadavg } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import autocannon from 'autocannon'
import { Kysely } from 'kysely'
import pg from 'pg'
import type { CoreDeps } from '../src/core/deps.js'
import type { Database } from '../src/db/schema.js'
import { buildDist, builtModule, reapOnExit, signIn, startTarget, type Target } from './harness.js'

const now = (): number => performance.timeOrigin + performance.now()
const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

function percentile (values: readonly number[], p: number): number {
  const sorted = Float64Array.from(values).sort()
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN
}

function median (values: readonly number[]): number {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b)
  const middle = sorted.length / 2
  if (sorted.length === 0) return Number.NaN
  return sorted.length % 2 === 1 ? sorted[Math.floor(middle)] ?? Number.NaN : ((sorted[middle - 1] ?? Number.NaN) + (sorted[middle] ?? Number.NaN)) / 2
}

/** A probe move carries its sequence number in its position (on the grid, so it is not snapped). */
const GRID = 20
const SEQ_PER_ROW = 10_000
const probePosition = (seq: number): { x: number, y: number } => ({ x: (seq % SEQ_PER_ROW) * GRID, y: Math.floor(seq / SEQ_PER_ROW) * GRID })
const probeSeq = (x: number, y: number): number => Math.round(y / GRID) * SEQ_PER_ROW + Math.round(x / GRID)

interface Probe { name: string, url: string, tileIds: string[] }
interface ProbeReport { name: string, sent: number, skipped: number, acked: number, failed: number, received: number, lost: number, lostMoves: Array<{ tileId: string, x: number, y: number }>, duplicated: number, p50: number, p99: number, max: number, latencies: number[] }
interface StreamReport { events: number, outOfOrder: number }
type ProbeCommand =
  | { cmd: 'subscribe', url: string, cookie: string }
  | { cmd: 'start', probes: Probe[], cookie: string, everyMs: number }
  | { cmd: 'stop' }
  | { cmd: 'close' }

/**
 * Child (`event-writes.ts probe`): holds the event stream on B and sends the probe moves, so both
 * the acknowledgement and the arrival are timed by one clock on an event loop that autocannon, in
 * the parent, does not hold up. Driven over IPC (ProbeCommand); `stop` answers once every
 * acknowledged move arrived or the stream was quiet for 5 s.
 */
async function probeChild (): Promise<void> {
  let stream: ClientRequest | undefined
  const tiles = new Map<string, string>() // tile id → probe name
  const acks = new Map<number, { name: string, tileId: string, at: number }>()
  const arrivals = new Map<number, number[]>()
  let lastFrame = 0
  let sending: Array<{ timer: NodeJS.Timeout, pending: Set<Promise<void>>, sent: number, failed: number, skipped: number, name: string }> = []
  const streamReport: StreamReport = { events: 0, outOfOrder: 0 }
  let lastTx = -1n
  let lastId = -1n

  function frame (text: string, at: number): void {
    const idLine = /^id: (\d+)-(\d+)$/m.exec(text)
    if (idLine?.[1] !== undefined && idLine[2] !== undefined) {
      // SSE ids are log positions: each must follow the one before.
      const tx = BigInt(idLine[1])
      const id = BigInt(idLine[2])
      streamReport.events++
      if (tx < lastTx || (tx === lastTx && id <= lastId)) streamReport.outOfOrder++
      lastTx = tx
      lastId = id
      lastFrame = at
    }
    if (tiles.size === 0) return
    let probe = false
    for (const tileId of tiles.keys()) if (text.includes(tileId)) probe = true
    if (!probe) return
    const data = /^data: (.*)$/m.exec(text)?.[1]
    if (data === undefined) return
    const envelope = JSON.parse(data) as { type: string, payload: { tileId?: string, x?: number, y?: number } }
    const { tileId, x, y } = envelope.payload
    if (envelope.type !== 'position:updated' || tileId === undefined || !tiles.has(tileId) || x === undefined || y === undefined) return
    const seq = probeSeq(x, y)
    let times = arrivals.get(seq)
    if (times === undefined) arrivals.set(seq, times = [])
    times.push(at)
  }

  async function subscribe (url: string, cookie: string): Promise<number> {
    return await new Promise((resolve) => {
      const req = request(`${url}/api/sync/subscribe`, { headers: { accept: 'text/event-stream', cookie: `app_session=${cookie}` }, agent: false }, (res) => {
        if (res.statusCode !== 200) {
          res.resume()
          resolve(res.statusCode ?? 0)
          return
        }
        res.setEncoding('utf8')
        let buffer = ''
        res.on('data', (chunk: string) => {
          const at = now()
          buffer += chunk
          let end: number
          while ((end = buffer.indexOf('\n\n')) !== -1) {
            frame(buffer.slice(0, end), at)
            buffer = buffer.slice(end + 2)
          }
        })
        res.on('error', () => {})
        resolve(200)
      })
      req.on('error', () => { resolve(-1) })
      req.end()
      stream = req
    })
  }

  let nextSeq = 1
  function start (probes: Probe[], cookie: string, everyMs: number): void {
    acks.clear()
    arrivals.clear()
    tiles.clear()
    for (const probe of probes) for (const tileId of probe.tileIds) tiles.set(tileId, probe.name)
    sending = probes.map((probe) => {
      const state = { timer: undefined as unknown as NodeJS.Timeout, pending: new Set<Promise<void>>(), sent: 0, failed: 0, skipped: 0, name: probe.name }
      // At most one move in flight per tile (a second would queue on the tile's row lock, holding a
      // pooled connection while it waits: load no client makes); a tick with no tile free is skipped.
      const free = [...probe.tileIds]
      state.timer = setInterval(() => {
        const tileId = free.pop()
        if (tileId === undefined) {
          state.skipped++
          return
        }
        const seq = nextSeq++
        state.sent++
        const write = fetch(`${probe.url}/api/canvas/position`, {
          method: 'PATCH',
          headers: { cookie: `app_session=${cookie}`, 'content-type': 'application/json' },
          body: JSON.stringify({ tileId, ...probePosition(seq) })
        }).then(async (res) => {
          await res.arrayBuffer()
          if (res.ok) acks.set(seq, { name: probe.name, tileId, at: now() })
          else state.failed++
        }, () => { state.failed++ })
        state.pending.add(write)
        void write.finally(() => {
          state.pending.delete(write)
          free.push(tileId)
        })
      }, everyMs)
      return state
    })
  }

  async function stop (): Promise<{ probes: ProbeReport[], stream: StreamReport }> {
    for (const s of sending) clearInterval(s.timer)
    await Promise.all(sending.flatMap((s) => [...s.pending]))
    const waitStarted = now()
    for (;;) {
      let missing = 0
      for (const seq of acks.keys()) if (!arrivals.has(seq)) missing++
      if (missing === 0 || now() - Math.max(lastFrame, waitStarted) > 5_000) break
      await sleep(50)
    }
    const probes = sending.map((s): ProbeReport => {
      const latencies: number[] = []
      let acked = 0
      let received = 0
      let duplicated = 0
      const lostMoves: Array<{ tileId: string, x: number, y: number }> = []
      for (const [seq, ack] of acks) {
        if (ack.name !== s.name) continue
        acked++
        const times = arrivals.get(seq) ?? []
        if (times.length > 0) received++
        else lostMoves.push({ tileId: ack.tileId, ...probePosition(seq) })
        if (times.length > 1) duplicated += times.length - 1
        const first = times[0]
        // The event can leave the instance before the HTTP answer reaches the client: that counts as 0.
        if (first !== undefined) latencies.push(Math.max(0, first - ack.at))
      }
      return {
        name: s.name,
        sent: s.sent,
        skipped: s.skipped,
        acked,
        failed: s.failed,
        received,
        lost: acked - received,
        lostMoves,
        duplicated,
        p50: percentile(latencies, 0.5),
        p99: percentile(latencies, 0.99),
        max: percentile(latencies, 1),
        latencies
      }
    })
    const report = { probes, stream: { ...streamReport } }
    sending = []
    streamReport.events = 0
    streamReport.outOfOrder = 0
    return report
  }

  process.on('message', (message: ProbeCommand) => {
    void (async () => {
      if (message.cmd === 'subscribe') {
        lastTx = -1n
        lastId = -1n
        process.send?.({ status: await subscribe(message.url, message.cookie) })
      } else if (message.cmd === 'start') {
        start(message.probes, message.cookie, message.everyMs)
        process.send?.({ started: true })
      } else if (message.cmd === 'stop') {
        process.send?.(await stop())
      } else {
        stream?.destroy()
        stream = undefined
        process.send?.({ closed: true })
      }
    })()
  })
}

if (process.argv[2] === 'probe') {
  await probeChild()
} else {
  await main()
}

async function main (): Promise<void> {
  const databaseUrl = process.env.DATABASE_URL
  if (databaseUrl === undefined || databaseUrl === '') {
    console.error('bench/event-writes.ts needs DATABASE_URL (a Postgres database of its own: it writes there), e.g.\n' +
      '  createdb -h 127.0.0.1 -U postgres bench_writes && DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_writes npx tsx bench/event-writes.ts')
    process.exit(2)
  }
  const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
  const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
  const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50)
  const ALL_SCENARIOS = ['bare', 'bare-event', 'write', 'write-no-event', 'service', 'service2'] as const
  type Scenario = typeof ALL_SCENARIOS[number]
  const chosen = (process.env.BENCH_SCENARIOS ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '')
  for (const s of chosen) if (!(ALL_SCENARIOS as readonly string[]).includes(s)) throw new Error(`BENCH_SCENARIOS: unknown scenario ${s} (${ALL_SCENARIOS.join(', ')})`)
  const scenarios = ALL_SCENARIOS.filter((s) => chosen.length === 0 || chosen.includes(s))
  const ROOMS = 100
  const TILES_PER_ROOM = 10
  const PROBE_EVERY_MS = 20
  // Tiles per probe path, each with at most one move in flight: samples keep coming when writes are
  // slow, and the probes add at most this many concurrent writes per path to scenario 4.
  const PROBE_TILES = 4

  buildDist()
  // The service's own modules as production runs them (compiled), for the write without HTTP.
  const built = async <T>(path: string): Promise<T> => await import(pathToFileURL(builtModule(join(import.meta.dirname, '..'), path)).href) as T
  const { moveTile } = await built<typeof import('../src/core/canvas/tile-move.js')>('core/canvas/tile-move.js')
  const { OutageAwarePostgresDialect } = await built<typeof import('../src/db/outage-dialect.js')>('db/outage-dialect.js')
  const { createPostgresPool } = await built<typeof import('../src/db/postgres-pool.js')>('db/postgres-pool.js')
  const admin = new pg.Client({ connectionString: databaseUrl })
  admin.on('error', () => {})
  await admin.connect()
  const serverVersion = (await admin.query<{ server_version: string }>('show server_version')).rows[0]?.server_version ?? '?'
  const cores = availableParallelism()
  // The log is never pruned within 24 h, and every delivery read depends on its size: say how big it is.
  const logRows = (await admin.query<{ n: string }>('select count(*) as n from event_log').catch(() => ({ rows: [{ n: 'none yet' }] }))).rows[0]?.n ?? '?'
  const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100

  // Instance A runs throughout (idle during the bare scenarios); B only around scenario 4, so that
  // scenario 3 is one instance alone and not also paying for B reading every event A writes.
  const a = await startTarget('service')
  const token = await signIn(a, 'event-writes@bench.test')
  const json = { cookie: `app_session=${token}`, 'content-type': 'application/json' }

  async function post<T> (path: string, body: object): Promise<T> {
    const res = await fetch(`${a.url}${path}`, { method: 'POST', headers: json, body: JSON.stringify(body) })
    if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`)
    return ((await res.json()) as { data: T }).data
  }

  // Seed through the API: rooms of the signed-in user (so they are a member of every one), tiles in
  // a non-overlapping row each.
  const seedStarted = now()
  const rooms: string[] = []
  for (let r = 0; r < ROOMS; r += 10) {
    rooms.push(...await Promise.all(Array.from({ length: Math.min(10, ROOMS - r) }, async (_, k) =>
      (await post<{ id: string }>('/api/rooms', { name: `writes-${r + k}`, isPublic: false })).id)))
  }
  const tiles: Array<{ id: string, roomId: string }> = []
  for (const roomId of rooms) {
    tiles.push(...await Promise.all(Array.from({ length: TILES_PER_ROOM }, async (_, k) =>
      ({ id: (await post<{ id: string }>('/api/sparks', { title: `t${k}`, content: '', roomId, x: k * 220, y: 0 })).id, roomId }))))
  }
  const probeRoom = (await post<{ id: string }>('/api/rooms', { name: 'writes-probe', isPublic: false })).id
  const probeTile = async (label: string, k: number): Promise<string> =>
    (await post<{ id: string }>('/api/sparks', { title: `probe ${label} ${k}`, content: '', roomId: probeRoom, x: 0, y: 0 })).id
  const probeTiles = {
    cross: await Promise.all(Array.from({ length: PROBE_TILES }, async (_, k) => await probeTile('via A', k))),
    same: await Promise.all(Array.from({ length: PROBE_TILES }, async (_, k) => await probeTile('via B', k)))
  }
  const userId = (await (await fetch(`${a.url}/api/auth/me`, { headers: json })).json() as { data: { id: string } }).data.id
  console.log(`seeded ${rooms.length} rooms, ${tiles.length} tiles in ${((now() - seedStarted) / 1000).toFixed(1)} s`)

  /** The same spread of moves for every scenario: any of the tiles, anywhere on a grid. */
  const move = (): { tile: { id: string, roomId: string }, x: number, y: number } => ({
    tile: tiles[Math.floor(Math.random() * tiles.length)] ?? { id: '', roomId: '' },
    x: Math.floor(Math.random() * 200) * GRID,
    y: Math.floor(Math.random() * 200) * GRID
  })

  // ---- where the time goes: CPU of each party and Postgres backends' states, sampled during a run

  /** User and kernel CPU seconds of a process so far (NaN once it has exited). */
  function cpuSeconds (pid: number | undefined): { user: number, system: number } {
    try {
      const stat = readFileSync(`/proc/${String(pid)}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      return { user: Number(fields[11]) / CLOCK_TICKS, system: Number(fields[12]) / CLOCK_TICKS }
    } catch {
      return { user: Number.NaN, system: Number.NaN }
    }
  }
  /** CPU seconds the processes used since `before` (one entry per pid), and how much of it in the kernel. */
  function cpuSince (before: Map<number | undefined, { user: number, system: number }>): { total: number, system: number } {
    let total = 0
    let system = 0
    for (const [pid, first] of before) {
      const last = cpuSeconds(pid)
      const spent = last.user + last.system - first.user - first.system
      if (Number.isNaN(spent)) continue
      total += spent
      system += last.system - first.system
    }
    return { total, system }
  }
  function machineTicks (): { total: number, idle: number } {
    const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]?.split(/\s+/).slice(1, 9).map(Number) ?? []
    return { total: cpu.reduce((s, v) => s + v, 0), idle: (cpu[3] ?? 0) + (cpu[4] ?? 0) }
  }

  interface Usage { generator: number, service: number, serviceKernel: number, postgres: number, postgresKernel: number, machine: number, waits: Map<string, number>, transactions: number, eventRowsRead: number }

  /** Cumulative counters of this database (Postgres flushes them about once a second: approximate over a run). */
  async function counters (): Promise<{ transactions: number, eventRowsRead: number }> {
    const row = (await admin.query<{ transactions: string, event_rows: string }>(`
      select (select xact_commit + xact_rollback from pg_stat_database where datname = current_database()) as transactions,
        (select coalesce(idx_tup_fetch, 0) + coalesce(seq_tup_read, 0) from pg_stat_user_tables where relname = 'event_log') as event_rows`)).rows[0]
    return { transactions: Number(row?.transactions ?? Number.NaN), eventRowsRead: Number(row?.event_rows ?? Number.NaN) }
  }

  /**
   * CPU used during a run, in cores (the load generator is this process; postgres, the backends
   * connected to this database), and what those backends were doing: pg_stat_activity every
   * 100 ms, averaged as backends per state (`CPU`: active and waiting on nothing).
   */
  async function sampleUsage (servicePids: Array<number | undefined>): Promise<{ stop (): Promise<Usage> }> {
    const counters0 = await counters()
    const started = now()
    const generator0 = process.cpuUsage()
    const service0 = new Map(servicePids.map((pid) => [pid, cpuSeconds(pid)]))
    const machine0 = machineTicks()
    const backends = new Map<number | undefined, { user: number, system: number }>()
    const waits = new Map<string, number>()
    let samples = 0
    let running = true
    const loop = (async () => {
      // eslint-disable-next-line no-unmodified-loop-condition -- cleared by the code that ends the run, across an await
      while (running) {
        const result = await admin.query<{ pid: number, state: string | null, wait: string | null }>(`
          select pid, state, wait_event_type || ':' || wait_event as wait from pg_stat_activity
          where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'`)
        samples++
        for (const row of result.rows) {
          if (!backends.has(row.pid)) backends.set(row.pid, cpuSeconds(row.pid))
          if (row.state === 'idle' || row.state === null) continue
          const label = row.state === 'active' ? row.wait ?? 'CPU' : row.state
          waits.set(label, (waits.get(label) ?? 0) + 1)
        }
        await sleep(100)
      }
    })()
    return {
      async stop () {
        running = false
        await loop
        const seconds = (now() - started) / 1000
        const generator = process.cpuUsage(generator0)
        const machine1 = machineTicks()
        const postgres = cpuSince(backends)
        const service = cpuSince(service0)
        for (const [label, n] of waits) waits.set(label, n / Math.max(1, samples))
        const counters1 = await counters()
        return {
          generator: (generator.user + generator.system) / 1e6 / seconds,
          service: service.total / seconds,
          serviceKernel: service.system / service.total,
          postgres: postgres.total / seconds,
          postgresKernel: postgres.system / postgres.total,
          machine: (1 - (machine1.idle - machine0.idle) / Math.max(1, machine1.total - machine0.total)) * cores,
          waits,
          transactions: (counters1.transactions - counters0.transactions) / seconds,
          eventRowsRead: (counters1.eventRowsRead - counters0.eventRowsRead) / seconds
        }
      }
    }
  }

  // ---- the scenarios

  interface Run { writes: number, p99: number, failed: number, usage: Usage, parts?: number[] }

  /** CONNECTIONS clients, each one write after the other: a 1 s warm-up, then SECONDS measured. */
  async function closedLoop (write: (client: number) => Promise<void>): Promise<Run> {
    let running = true
    let counting = false
    let writes = 0
    let failed = 0
    const latencies: number[] = []
    const clients = Array.from({ length: CONNECTIONS }, async (_, client) => {
      // eslint-disable-next-line no-unmodified-loop-condition -- cleared by the code that ends the run, across an await
      while (running) {
        const started = performance.now()
        try {
          await write(client)
          if (counting) {
            writes++
            latencies.push(performance.now() - started)
          }
        } catch {
          if (counting) failed++
        }
      }
    })
    await sleep(1_000)
    counting = true
    const started = now()
    const usage = await sampleUsage([a.child.pid])
    await sleep(SECONDS * 1_000)
    counting = false
    const elapsed = (now() - started) / 1000
    const measured = await usage.stop()
    running = false
    await Promise.all(clients)
    return { writes: writes / elapsed, p99: percentile(latencies, 0.99), failed, usage: measured }
  }

  const UPDATE = 'update sparks set x = $1, y = $2, version = version + 1, updated_at = now() where id = $3'
  // The statement src/core/event-log.repository.ts (`insertEvents`) sends for one event.
  const INSERT_EVENT = `
    insert into event_log (type, payload, audience, user_id)
    select v.type, v.payload, v.audience, v.user_id
    from (values ($1::int, $2::text, $3::jsonb, $4::jsonb, $5::text)) as v (ord, type, payload, audience, user_id)
    order by v.ord`

  /** Scenarios 1 and 2: a connection of its own per client. */
  async function bare (withEvent: boolean): Promise<Run> {
    const pool = new pg.Pool({ connectionString: databaseUrl, max: CONNECTIONS })
    pool.on('error', () => {})
    const connections = await Promise.all(Array.from({ length: CONNECTIONS }, async () => await pool.connect()))
    for (const c of connections) c.on('error', () => {})
    const run = await closedLoop(async (client) => {
      const connection = connections[client]
      if (connection === undefined) return
      const { tile, x, y } = move()
      try {
        await connection.query('begin')
        await connection.query(UPDATE, [x, y, tile.id])
        if (withEvent) {
          const payload = JSON.stringify({ tileId: tile.id, x, y, snapped: false, collisionDetected: false })
          await connection.query(INSERT_EVENT, [0, 'position:updated', payload, JSON.stringify({ kind: 'room', roomId: tile.roomId }), userId])
        }
        await connection.query('commit')
      } catch (error) {
        await connection.query('rollback').catch(() => {})
        throw error
      }
    })
    for (const c of connections) c.release()
    await pool.end()
    return run
  }

  /**
   * The service's own write without HTTP or delivery: `moveTile` from dist/ on the service's
   * dialect and pool, with CONNECTIONS connections like the bare client. `withEvent: false` runs the
   * same code with the event_log insert answered in the client and never sent: the same write
   * without its event.
   */
  async function serviceWrite (withEvent: boolean): Promise<Run> {
    const pool = createPostgresPool({ connectionString: databaseUrl ?? '', max: CONNECTIONS })
    if (!withEvent) {
      pool.on('connect', (client) => {
        const query = client.query.bind(client) as (text: string, values?: unknown[]) => Promise<unknown>
        Object.assign(client, {
          query: async (text: unknown, values?: unknown[]) => typeof text === 'string' && text.includes('insert into event_log')
            ? { command: 'INSERT', rowCount: 1, rows: [] }
            : await query(text as string, values)
        })
      })
    }
    const db = new Kysely<Database>({ dialect: new OutageAwarePostgresDialect({ pool }) })
    const deps = { db, clock: { now: () => new Date() }, events: { committed () {} } } as unknown as CoreDeps
    const actor = { userId, sessionId: 'bench' }
    const run = await closedLoop(async () => {
      const { tile, x, y } = move()
      await moveTile(deps, actor, { tileId: tile.id, x, y }, 'Tile')
    })
    await db.destroy()
    return run
  }

  function options (target: Target, connections: number, duration: number): autocannon.Options {
    return {
      url: `${target.url}/api/canvas/position`,
      method: 'PATCH',
      headers: json,
      connections,
      duration,
      requests: [{
        setupRequest: (req) => {
          const { tile, x, y } = move()
          req.body = JSON.stringify({ tileId: tile.id, x, y })
          return req
        }
      }]
    }
  }

  /** Scenarios 3 and 4: autocannon against each target at once (connections shared out), 2xx per second. */
  async function service (targets: Target[], during?: { start (): Promise<void>, stop (): Promise<void> }): Promise<Run> {
    const each = Math.floor(CONNECTIONS / targets.length)
    await Promise.all(targets.map(async (t) => await autocannon(options(t, each, 1))))
    await during?.start()
    const usage = await sampleUsage(targets.map((t) => t.child.pid))
    const results = await Promise.all(targets.map(async (t) => await autocannon(options(t, each, SECONDS))))
    const measured = await usage.stop()
    await during?.stop()
    const parts = results.map((r) => r['2xx'] / r.duration)
    return {
      writes: parts.reduce((s, v) => s + v, 0),
      // The slower target's p99: the combined figure is as good as its worse half.
      p99: Math.max(...results.map((r) => r.latency.p99)),
      failed: results.reduce((s, r) => s + r.non2xx + r.errors + r.timeouts, 0),
      usage: measured,
      parts
    }
  }

  const probeChildProcess: ChildProcess = reapOnExit(spawn(process.execPath, ['--import=tsx', import.meta.filename, 'probe'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }))
  async function ask<T> (message: ProbeCommand): Promise<T> {
    const reply = new Promise<T>((resolve) => { probeChildProcess.once('message', (m) => { resolve(m as T) }) })
    probeChildProcess.send(message)
    return await reply
  }

  const LABELS: Record<Scenario, string> = {
    bare: 'bare pg',
    'bare-event': 'bare pg + event',
    write: 'service write, no HTTP',
    'write-no-event': '  the same, no event',
    service: 'service, 1 instance',
    service2: 'service, 2 instances'
  }
  const runs = new Map<Scenario, Run[]>(scenarios.map((s) => [s, []]))
  const probeRounds: Array<{ probes: ProbeReport[], stream: StreamReport }> = []
  const line = (name: string, run: Run): string => {
    const parts = run.parts === undefined ? '' : `  (${run.parts.map((p) => p.toFixed(0)).join(' + ')})`
    return `  ${name.padEnd(24)} ${run.writes.toFixed(0).padStart(6)} writes/s   p99 ${run.p99.toFixed(1).padStart(6)} ms${run.failed > 0 ? `   failed ${run.failed}` : ''}${parts}`
  }
  const probeLine = (r: ProbeReport): string =>
    `p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, max ${r.max.toFixed(1)} ms; ${r.received}/${r.acked} arrived${r.skipped > 0 ? ` (${r.skipped} ticks skipped: no tile free)` : ''}` +
    `${r.lost > 0 ? `, LOST ${r.lost}` : ''}${r.duplicated > 0 ? `, DUPLICATED ${r.duplicated}` : ''}${r.failed > 0 ? `, ${r.failed} writes failed` : ''}`

  console.log(`Node ${process.version} (this process, the service and the load generator), Postgres ${serverVersion} (event_log rows at start: ${logRows}), cache: ${process.env.REDIS_URL === undefined ? 'memory' : 'Redis'}`)
  // Other users' work on a shared machine moves every figure: say how busy it was.
  console.log(`${tiles.length} tiles in ${rooms.length} rooms; ${ROUNDS} round(s) of ${SECONDS} s per scenario (1 s warm-up each), ${CONNECTIONS} connections; ${cores} cores, load average ${loadavg()[0]?.toFixed(1) ?? '?'}`)
  for (let round = 1; round <= ROUNDS; round++) {
    console.log(`round ${round} of ${ROUNDS} (load average ${loadavg()[0]?.toFixed(1) ?? '?'})`)
    for (const scenario of scenarios) {
      let run: Run
      if (scenario === 'bare' || scenario === 'bare-event') {
        run = await bare(scenario === 'bare-event')
      } else if (scenario === 'write' || scenario === 'write-no-event') {
        run = await serviceWrite(scenario === 'write')
      } else if (scenario === 'service') {
        run = await service([a])
      } else {
        const b = await startTarget('service')
        const subscribed = await ask<{ status: number }>({ cmd: 'subscribe', url: b.url, cookie: token })
        if (subscribed.status !== 200) throw new Error(`subscribe on B: ${subscribed.status}`)
        let report: { probes: ProbeReport[], stream: StreamReport } | undefined
        run = await service([a, b], {
          start: async () => {
            await ask({ cmd: 'start', cookie: token, everyMs: PROBE_EVERY_MS, probes: [{ name: 'cross', url: a.url, tileIds: probeTiles.cross }, { name: 'same', url: b.url, tileIds: probeTiles.same }] })
          },
          stop: async () => { report = await ask({ cmd: 'stop' }) }
        })
        await ask({ cmd: 'close' })
        await b.stop()
        if (report !== undefined) probeRounds.push(report)
      }
      runs.get(scenario)?.push(run)
      console.log(line(LABELS[scenario], run))
      if (scenario === 'service2') {
        const report = probeRounds.at(-1)
        for (const p of report?.probes ?? []) {
          console.log(`    delivery to B, written via ${p.name === 'cross' ? 'A (cross-instance)' : 'B (same instance)'}: ${probeLine(p)}`)
          if (p.lostMoves.length > 0) {
            // Lost in the outbox (no row for an acknowledged move) or in delivery (a row never streamed)?
            let logged = 0
            for (const m of p.lostMoves) {
              const found = await admin.query('select 1 from event_log where type = \'position:updated\' and payload->>\'tileId\' = $1 and (payload->>\'x\')::float8 = $2 and (payload->>\'y\')::float8 = $3',
                [m.tileId, m.x, m.y])
              if ((found.rowCount ?? 0) > 0) logged++
            }
            console.log(`      of the ${p.lostMoves.length} lost, ${logged} are in event_log`)
          }
        }
        console.log(`    stream on B: ${report?.stream.events ?? 0} events${(report?.stream.outOfOrder ?? 0) > 0 ? `, OUT OF ORDER ${report?.stream.outOfOrder ?? 0}` : ', in log order'}`)
      }
    }
  }

  await ask({ cmd: 'close' })
  probeChildProcess.kill()
  await a.stop()
  await admin.end()

  // ---- summary

  const of = (s: Scenario): Run[] => runs.get(s) ?? []
  /** The round whose writes/s is the median (its p99 comes with it). */
  const typical = (s: Scenario): Run | undefined => {
    const all = of(s)
    const sorted = [...all].sort((x, y) => x.writes - y.writes)
    return sorted[Math.floor((sorted.length - 1) / 2)]
  }
  const ratio = (x: Scenario, y: Scenario): number => median(of(x).map((r, i) => r.writes / (of(y)[i]?.writes ?? Number.NaN)))
  const perRound = (x: Scenario, y: Scenario): string => of(x).map((r, i) => (r.writes / (of(y)[i]?.writes ?? Number.NaN)).toFixed(2)).join(', ')
  const verdict = (value: number, goal: number): string => Number.isNaN(value) ? '' : value >= goal ? ' met' : ' MISSED'

  console.log(`\nMedian round of ${ROUNDS} (writes/s; its p99):`)
  for (const s of scenarios) {
    const t = typical(s)
    if (t !== undefined) console.log(line(LABELS[s], t))
  }
  console.log('\nRatios (median of same-round ratios; per round in brackets):')
  const pairs: Array<[Scenario, Scenario, string, number | undefined]> = [
    ['service', 'bare', 'service, 1 instance / bare pg', 0.5],
    ['service2', 'bare', 'service, 2 instances / bare pg', 0.5],
    ['bare-event', 'bare', 'bare pg + event / bare pg', 0.8],
    ['write', 'write-no-event', 'service write with / without its event', 0.8],
    ['write', 'bare', 'service write, no HTTP / bare pg', undefined],
    ['service', 'write', 'service, 1 instance / its write, no HTTP', undefined],
    ['service2', 'service', 'service, 2 instances / 1 instance', undefined]
  ]
  for (const [x, y, label, goal] of pairs) {
    if (!runs.has(x) || !runs.has(y)) continue
    const value = ratio(x, y)
    console.log(`  ${label.padEnd(42)} ${value.toFixed(2)}×  ${goal === undefined ? '' : `(goal ≥ ${goal}×${verdict(value, goal)})  `}[${perRound(x, y)}]`)
  }

  if (probeRounds.length > 0) {
    console.log(`\nEvent delivery during scenario 4 (a probe move every ${PROBE_EVERY_MS} ms per path over ${PROBE_TILES} tiles, one in flight per tile; latency: arrival at the subscriber on B − HTTP acknowledgement):`)
    for (const name of ['cross', 'same']) {
      const reports = probeRounds.map((r) => r.probes.find((p) => p.name === name)).filter((p): p is ProbeReport => p !== undefined)
      const pooled = reports.flatMap((r) => r.latencies)
      const sum = (f: (r: ProbeReport) => number): number => reports.reduce((s, r) => s + f(r), 0)
      console.log(`  written via ${name === 'cross' ? 'A (cross-instance)' : 'B (same instance) '}: median p50 ${median(reports.map((r) => r.p50)).toFixed(1)} ms, median p99 ${median(reports.map((r) => r.p99)).toFixed(1)} ms` +
        ` (all rounds pooled: p50 ${percentile(pooled, 0.5).toFixed(1)}, p99 ${percentile(pooled, 0.99).toFixed(1)}, max ${percentile(pooled, 1).toFixed(1)} ms);` +
        ` ${sum((r) => r.received)}/${sum((r) => r.acked)} arrived, lost ${sum((r) => r.lost)}, duplicated ${sum((r) => r.duplicated)}`)
    }
    console.log(`  stream on B: ${probeRounds.reduce((s, r) => s + r.stream.events, 0)} events, out of log order ${probeRounds.reduce((s, r) => s + r.stream.outOfOrder, 0)}`)
  }

  console.log('\nWhere the time goes (medians over rounds). CPU in cores: generator, this process (autocannon, the bare client or the')
  console.log('write without HTTP); service, its instances; postgres, the client backends of this database; machine, everything on its')
  console.log(`${cores} cores, other users' work included. Per write: CPU ms (in the kernel), Postgres transactions (the writes and every`)
  console.log('statement outside one) and event_log rows read (from statistics Postgres flushes about once a second: approximate).')
  console.log(`  ${''.padEnd(24)} ${'cores:'.padEnd(34)}│ per write:`)
  console.log(`  ${'scenario'.padEnd(24)} ${'generator'.padStart(9)} ${'service'.padStart(8)} ${'postgres'.padStart(8)} ${'machine'.padStart(7)} │ ${'generator'.padStart(9)} ${'service'.padStart(14)} ${'postgres'.padStart(14)} ${'transactions'.padStart(12)} ${'event rows'.padStart(10)}`)
  for (const s of scenarios) {
    const all = of(s)
    if (all.length === 0) continue
    const middle = (f: (r: Run) => number): number => median(all.map(f))
    const cpu = (f: (u: Usage) => number, kernel: (u: Usage) => number): string => {
      const ms = middle((r) => f(r.usage) * 1000 / r.writes)
      return Number.isNaN(ms) || ms < 0.005 ? '-' : `${ms.toFixed(2)} (${(middle((r) => kernel(r.usage)) * 100).toFixed(0)}%)`
    }
    console.log(`  ${LABELS[s].padEnd(24)} ${middle((r) => r.usage.generator).toFixed(2).padStart(9)} ${middle((r) => r.usage.service).toFixed(2).padStart(8)} ` +
      `${middle((r) => r.usage.postgres).toFixed(2).padStart(8)} ${middle((r) => r.usage.machine).toFixed(2).padStart(7)} │ ` +
      `${middle((r) => r.usage.generator * 1000 / r.writes).toFixed(2).padStart(9)} ${cpu((u) => u.service, (u) => u.serviceKernel).padStart(14)} ` +
      `${cpu((u) => u.postgres, (u) => u.postgresKernel).padStart(14)} ${middle((r) => r.usage.transactions / r.writes).toFixed(2).padStart(12)} ` +
      `${middle((r) => r.usage.eventRowsRead / r.writes).toFixed(1).padStart(10)}`)
  }
  console.log('Postgres client backends of this database by state (average count; CPU: active, waiting on nothing):')
  for (const s of scenarios) {
    const all = of(s).map((r) => r.usage)
    if (all.length === 0) continue
    const waits = new Map<string, number>()
    for (const u of all) for (const [label, n] of u.waits) waits.set(label, (waits.get(label) ?? 0) + n / all.length)
    console.log(`  ${LABELS[s].padEnd(24)} ${[...waits].sort((x, y) => y[1] - x[1]).slice(0, 7).map(([label, n]) => `${label} ${n.toFixed(1)}`).join(', ')}`)
  }
}
