// `npx tsx bench/presence.ts` (issue 42): presence in a crowded room across two instances. USERS
// users become present in one public room (POST /api/canvas/presence, half through each instance),
// then each reports a cursor RATE times a second (POST /api/canvas/cursor, half through each
// instance, open loop at USERS × RATE requests/s), then all leave. OBSERVERS other members hold
// event streams (half on each instance) and count what reaches them. Measured:
//   1. the presence answer (GET /api/canvas/presence, alternately on each instance, one at a time
//      every 100 ms): p50 / p99 and size, quiet and during the cursor load, against GET
//      /api/rooms/:roomId sampled the same way in the same windows (the baseline: a one-row read);
//   2. per stream and second: `cursors:batch-updated` messages, the cursors they carry, and
//      `presence:*` messages, during the crowd's cursor load against SMALL users reporting at the
//      same rate each (goal: messages bounded by the 100 ms coalescing — about 10 a second per room —
//      not by the number of users, so the crowd / small ratio of messages stays near 1×);
//   3. the joins and leaves themselves: every observer gets one `presence:joined` and one
//      `presence:left` per user (never a join without its leave), and how long they take to arrive.
// The service runs as bench/sse.ts runs it (bench/sse-serve.ts: built `dist/`, logs at `info`,
// Postgres + Redis), with the tiers raised: a user reporting 10 times a second sends 600 reports a
// minute, past the `canvas` tier's 300.
//   createdb -h 127.0.0.1 -U postgres bench_presence
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_presence REDIS_URL=redis://127.0.0.1:6379/9 npx tsx bench/presence.ts
// Reports are paced evenly (each user at its own phase, every 1/RATE s), not in per-second bursts as
// autocannon's rate limit sends them, which would make the coalescing look better than it is; past
// 20 reports in flight per connection a report is skipped (counted) rather than queued without end.
// BENCH_USERS (1000), BENCH_RATE (10 reports per user per second), BENCH_SECONDS (10),
// BENCH_OBSERVERS (20), BENCH_SMALL (10), BENCH_CONNECTIONS (50 per instance).
import http from 'node:http'
import { loadavg } from 'node:os'
import { buildDist, positiveEnv } from './harness.js'
import { clientIp, fixed, now, signInMany, sleep, startService, type Service } from './live-cluster.js'

if (process.env.DATABASE_URL === undefined || process.env.REDIS_URL === undefined) {
  console.error('bench/presence.ts measures on Postgres + Redis: set DATABASE_URL (a database of its own) and REDIS_URL.')
  process.exit(2)
}
const USERS = positiveEnv('BENCH_USERS', 1000)
const RATE = positiveEnv('BENCH_RATE', 10)
const SECONDS = positiveEnv('BENCH_SECONDS', 10)
const OBSERVERS = positiveEnv('BENCH_OBSERVERS', 20)
const SMALL = Math.min(positiveEnv('BENCH_SMALL', 10), USERS)
const CONNECTIONS = positiveEnv('BENCH_CONNECTIONS', 50)
const load = (): string => loadavg().map((l) => l.toFixed(1)).join(' / ')

buildDist()
const serviceEnv = { RATE_LIMIT_KEY_PREFIX: `bench-presence-${Date.now()}:`, TRUST_PROXY: '127.0.0.1' }
const instances: Service[] = [await startService(serviceEnv), await startService(serviceEnv)]
const stopAll = async (): Promise<void> => { await Promise.all(instances.map(async (s) => { await s.stop() })) }
const instanceOf = (i: number): Service => instances[i % 2] as Service
console.log(`two instances: ${instances.map((s) => s.url).join(', ')}; ${USERS} users × ${RATE} reports/s, ${OBSERVERS} observers; load ${load()}`)

const signedIn = await signInMany(instances[0] as Service, OBSERVERS + USERS, 'presence')
const observers = signedIn.slice(0, OBSERVERS)
const crowd = signedIn.slice(OBSERVERS)
const headersOf = (cookie: string, ip: number): Record<string, string> => ({ cookie: `app_session=${cookie}`, 'content-type': 'application/json', 'x-forwarded-for': clientIp(ip) })

async function call (target: Service, method: 'GET' | 'POST', path: string, cookie: string, ip: number, body?: object): Promise<Response> {
  return await fetch(`${target.url}${path}`, { method, headers: headersOf(cookie, ip), ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
}

const created = await call(instanceOf(0), 'POST', '/api/rooms', observers[0] as string, 1, { name: `Presence bench ${Date.now()}`, isPublic: true })
if (created.status !== 201) throw new Error(`create room: ${created.status} ${await created.text()}`)
const roomId = ((await created.json()) as { data: { id: string } }).data.id

/** Runs `work` over `items` with `width` of them at once. */
async function inParallel<T> (items: T[], width: number, work: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) {
      const i = next++
      await work(items[i] as T, i)
    }
  }))
}

async function expectStatus (response: Promise<Response>, status: number, what: string): Promise<void> {
  const res = await response
  if (res.status !== status) throw new Error(`${what}: ${res.status} ${await res.text()}`)
  await res.body?.cancel()
}

// Observers are present (and members) before their streams open, so they count only the crowd's joins.
await inParallel(observers, 8, async (cookie, i) => { await expectStatus(call(instanceOf(i), 'POST', '/api/canvas/presence', cookie, 100 + i, { roomId }), 204, 'observer presence') })
await sleep(1_000) // relayed and delivered before the streams open

interface Counts { batches: number, cursors: number, presence: number, joined: Set<string>, left: Set<string>, lastJoinAt: number, lastLeftAt: number }

/** An event stream that only counts: message types, the cursors a batch carries, who joined and left. */
async function observe (target: Service, cookie: string, ip: number): Promise<{ counts: Counts, close (): void }> {
  const abort = new AbortController()
  const response = await fetch(`${target.url}/api/sync/subscribe`, { headers: { ...headersOf(cookie, ip), accept: 'text/event-stream' }, signal: abort.signal })
  if (response.status !== 200 || response.body === null) throw new Error(`stream: ${response.status}`)
  const counts: Counts = { batches: 0, cursors: 0, presence: 0, joined: new Set(), left: new Set(), lastJoinAt: 0, lastLeftAt: 0 }
  const decoder = new TextDecoder()
  let buffer = ''
  void (async () => {
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true })
        let end: number
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const message = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const type = /"type":"([^"]+)"/.exec(message)?.[1]
          if (type === 'cursors:batch-updated') {
            counts.batches++
            counts.cursors += message.split('{"userId"').length - 1
          } else if (type === 'presence:joined') {
            counts.presence++
            counts.joined.add(/"user":\{"userId":"([^"]+)"/.exec(message)?.[1] ?? '')
            counts.lastJoinAt = now()
          } else if (type === 'presence:left') {
            counts.presence++
            counts.left.add(/"payload":\{"roomId":"[^"]+","userId":"([^"]+)"/.exec(message)?.[1] ?? '')
            counts.lastLeftAt = now()
          }
        }
      }
    } catch {
      // closed
    }
  })()
  return { counts, close: () => { abort.abort() } }
}

const streams = await Promise.all(observers.map(async (cookie, i) => await observe(instanceOf(i), cookie, 1_000 + i)))
const snapshot = (): Array<Pick<Counts, 'batches' | 'cursors' | 'presence'>> => streams.map(({ counts }) => ({ batches: counts.batches, cursors: counts.cursors, presence: counts.presence }))

// 3a. The crowd becomes present, half through each instance.
const joinStart = now()
await inParallel(crowd, 32, async (cookie, i) => { await expectStatus(call(instanceOf(i), 'POST', '/api/canvas/presence', cookie, 10_000 + i, { roomId }), 204, 'presence') })
const joinsSent = now()
for (let waited = 0; waited < 30_000 && !streams.every(({ counts }) => counts.joined.size >= USERS); waited += 100) await sleep(100)
const joinsSeen = streams.map(({ counts }) => counts.joined.size)
const joinsDone = Math.max(...streams.map(({ counts }) => counts.lastJoinAt))

interface Sample { ms: number[], bytes: number[], failures: number }
/** GETs `path` one at a time every 100 ms, alternately on each instance, until `stop` resolves. */
async function sample (path: string, stop: Promise<void>): Promise<Sample> {
  const result: Sample = { ms: [], bytes: [], failures: 0 }
  const state = { done: false }
  void stop.then(() => { state.done = true })
  for (let i = 0; !state.done; i++) {
    const started = now()
    const res = await call(instanceOf(i), 'GET', path, observers[i % observers.length] as string, 100 + (i % observers.length))
    const body = await res.arrayBuffer()
    if (res.status === 200) {
      result.ms.push(now() - started)
      result.bytes.push(body.byteLength)
    } else {
      result.failures++
    }
    await sleep(Math.max(0, 100 - (now() - started)))
  }
  return result
}
const quantile = (values: number[], q: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number
}
const presencePath = `/api/canvas/presence?roomId=${roomId}`
const roomPath = `/api/rooms/${roomId}`

async function sampleBoth (window: Promise<void>): Promise<{ presence: Sample, room: Sample }> {
  const [presence, room] = await Promise.all([sample(presencePath, window), sample(roomPath, window)])
  return { presence, room }
}

// 1a. The answer, quiet.
const quiet = await sampleBoth(sleep(Math.min(5, SECONDS) * 1000))

const agents = instances.map(() => new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS }))

/** One POST over the instance's keep-alive connections; its status (0: no answer). */
async function post (half: number, path: string, headers: Record<string, string>, body: string): Promise<number> {
  return await new Promise((resolve) => {
    const request = http.request(`${instanceOf(half).url}${path}`, { method: 'POST', agent: agents[half], headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      res.resume()
      res.on('end', () => { resolve(res.statusCode ?? 0) })
    })
    request.on('error', () => { resolve(0) })
    request.end(body)
  })
}

interface Load { offered: number, achieved: number, refused: number, skipped: number, perStream: { batches: number, cursors: number, presence: number }, answers: { presence: Sample, room: Sample } }

/** Cursor reports from `users` at RATE each, evenly paced, half through each instance, for SECONDS; what the streams got meanwhile. */
async function cursorLoad (users: string[]): Promise<Load> {
  let release!: () => void
  const window = new Promise<void>((resolve) => { release = resolve })
  const answers = sampleBoth(window)
  const before = snapshot()
  const total = users.length * RATE * SECONDS
  const inFlight = [0, 0]
  const maxInFlight = CONNECTIONS * 20
  const outcome = { answered: 0, refused: 0, skipped: 0 }
  const pending: Array<Promise<void>> = []
  const started = now()
  for (let sent = 0; sent < total;) {
    const due = Math.min(total, Math.floor((now() - started) * users.length * RATE / 1000))
    for (; sent < due; sent++) {
      const user = sent % users.length
      const half = user % 2
      if ((inFlight[half] ?? 0) >= maxInFlight) { outcome.skipped++; continue }
      inFlight[half] = (inFlight[half] ?? 0) + 1
      const body = JSON.stringify({ roomId, x: (sent * 37) % 2000, y: (sent * 53) % 2000 })
      pending.push(post(half, '/api/canvas/cursor', headersOf(users[user] as string, 10_000 + user), body).then((status) => {
        inFlight[half] = (inFlight[half] ?? 0) - 1
        if (status === 204) outcome.answered++
        else outcome.refused++
      }))
    }
    await sleep(5)
  }
  await Promise.all(pending)
  const seconds = (now() - started) / 1000
  await sleep(300) // the last batches
  release()
  const after = snapshot()
  const per = (key: 'batches' | 'cursors' | 'presence'): number => after.reduce((sum, counts, i) => sum + counts[key] - (before[i]?.[key] ?? 0), 0) / streams.length / seconds
  return {
    offered: users.length * RATE,
    achieved: outcome.answered / seconds,
    refused: outcome.refused,
    skipped: outcome.skipped,
    perStream: { batches: per('batches'), cursors: per('cursors'), presence: per('presence') },
    answers: await answers
  }
}

// 2. A few users reporting, then the whole crowd (1b: the answer during the crowd's load).
const small = await cursorLoad(crowd.slice(0, SMALL))
const full = await cursorLoad(crowd)

// 3b. Everyone leaves.
const leaveStart = now()
await inParallel(crowd, 32, async (cookie, i) => { await expectStatus(call(instanceOf(i), 'POST', '/api/canvas/cursor/leave', cookie, 10_000 + i, { roomId }), 204, 'leave') })
for (let waited = 0; waited < 30_000 && !streams.every(({ counts }) => counts.left.size >= counts.joined.size); waited += 100) await sleep(100)
const leavesDone = Math.max(...streams.map(({ counts }) => counts.lastLeftAt))
const paired = streams.every(({ counts }) => counts.left.size === counts.joined.size && [...counts.joined].every((id) => counts.left.has(id)))
for (const { close } of streams) close()
for (const agent of agents) agent.destroy()
await stopAll()

const answerLine = (label: string, s: { presence: Sample, room: Sample }): string =>
  `  ${label.padEnd(28)} presence p50 ${fixed(quantile(s.presence.ms, 0.5))} ms  p99 ${fixed(quantile(s.presence.ms, 0.99))} ms  ` +
  `${(quantile(s.presence.bytes, 0.5) / 1024).toFixed(1)} KiB (n ${s.presence.ms.length}${s.presence.failures > 0 ? `, ${s.presence.failures} failed` : ''})   ` +
  `room p99 ${fixed(quantile(s.room.ms, 0.99))} ms   p99 ratio ${(quantile(s.presence.ms, 0.99) / quantile(s.room.ms, 0.99)).toFixed(2)}×`
const loadLine = (label: string, r: Load): string =>
  `  ${label.padEnd(28)} reports offered ${r.offered}/s answered ${r.achieved.toFixed(0)}/s${r.refused + r.skipped > 0 ? ` (refused or failed ${r.refused}, skipped at the in-flight cap ${r.skipped})` : ''}   ` +
  `per stream: ${r.perStream.batches.toFixed(1)} cursors:batch-updated/s carrying ${r.perStream.cursors.toFixed(0)} cursors/s, ${r.perStream.presence.toFixed(2)} presence:*/s`

console.log(`\nload average at the end: ${load()}`)
console.log('1. the presence answer (the room read as baseline, same windows):')
console.log(answerLine(`quiet, ${USERS} present`, quiet))
console.log(answerLine(`${USERS} × ${RATE} reports/s`, full.answers))
console.log('2. cursor load (per stream: messages bounded by the 100 ms coalescing, not by users):')
console.log(loadLine(`${SMALL} users × ${RATE}/s`, small))
console.log(loadLine(`${USERS} users × ${RATE}/s`, full))
console.log(`  crowd / small, cursors:batch-updated per stream per second: ${(full.perStream.batches / small.perStream.batches).toFixed(2)}×`)
console.log('3. joins and leaves:')
console.log(`  presence:joined per stream: ${Math.min(...joinsSeen)}–${Math.max(...joinsSeen)} of ${USERS}; ${USERS} reports sent in ${((joinsSent - joinStart) / 1000).toFixed(1)} s, the last join seen ${((joinsDone - joinStart) / 1000).toFixed(1)} s after the first report`)
console.log(`  presence:left: the last seen ${((leavesDone - leaveStart) / 1000).toFixed(1)} s after the first leave; every join has its leave on every stream: ${paired ? 'yes' : 'NO'}`)
