// A full layout queue (COMPUTE_THREADS=1, COMPUTE_QUEUE=1: one layout running, one waiting):
// further layouts are refused at once with 503 ServiceUnavailable + Retry-After (REST) or
// `unavailable` + retry-after (RPC); the accepted ones complete; nothing answers 500; once the
// queue drains, layouts are accepted again.
import t from 'tap'
import { Code, ConnectError } from '@connectrpc/connect'
import { CanvasService } from '../src/gen/app/canvas/v1/canvas_pb.js'
import { forceDirectedLayout } from '../src/core/canvas/layout.js'
import { MAX_TILES_PER_ROOM } from '../src/core/canvas/tile-limit.js'
import { startApp } from './helpers/app.js'
import { plain, signInPerson } from './helpers/people.js'
import { seedTiles } from './helpers/tiles.js'

// METRICS_PORT: the pool's load is read from canvas_compute_tasks, so a test sends its extra
// layouts once the thread and the queue are both taken, whatever the machine's speed.
const s = await startApp({ COMPUTE_THREADS: '1', COMPUTE_QUEUE: '1', METRICS_PORT: '0' })
t.teardown(s.close)
const owner = await signInPerson(s, 'crowd')
const roomId = (await owner.rest('POST', '/api/rooms', { name: 'Busy canvas', isPublic: true })).json().data.id as string
const ids = await seedTiles(s, roomId, owner.userId, MAX_TILES_PER_ROOM)
const expected = forceDirectedLayout(ids)

/** Resolves once `n` layouts are running or waiting in the pool. */
async function inPool (n: number): Promise<void> {
  const deadline = Date.now() + 30_000
  while (Date.now() < deadline) {
    const text = await (await fetch(`http://127.0.0.1:${String(s.app.metricsPort())}/metrics`)).text()
    const count = [...text.matchAll(/^canvas_compute_tasks\{state="(?:running|waiting)"\} (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0)
    if (count >= n) return
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`${n} layouts never reached the pool`)
}

interface Outcome { transport: 'rest' | 'rpc', status: number, retryAfter: string | null, message: string, positions?: unknown }

async function viaRest (): Promise<Outcome> {
  const res = await owner.rest('POST', '/api/canvas/layout/compute', { roomId, algorithm: 'force-directed' })
  const body = res.json()
  return { transport: 'rest', status: res.statusCode, retryAfter: (res.headers['retry-after'] as string | undefined) ?? null, message: body.message ?? '', positions: body.data?.positions }
}

async function viaRpc (): Promise<Outcome> {
  try {
    const reply = await owner.rpc(CanvasService).computeLayout({ roomId, algorithm: 'force-directed' })
    return { transport: 'rpc', status: 200, retryAfter: null, message: '', positions: plain(reply.positions) }
  } catch (error) {
    const e = ConnectError.from(error)
    return { transport: 'rpc', status: e.code === Code.Unavailable ? 503 : 500, retryAfter: e.metadata.get('retry-after'), message: e.rawMessage }
  }
}

t.test('layouts past the queue are refused with 503 / unavailable and Retry-After; the accepted ones complete', async (t) => {
  // One layout of 1,000 tiles keeps the only thread busy far longer than the requests below take
  // to arrive: the first two fill the thread and the queue, the next four find both taken.
  const accepted = [viaRest(), viaRpc()]
  await inPool(2)
  const refused = await Promise.all([viaRest(), viaRpc(), viaRest(), viaRpc()])
  for (const outcome of refused) {
    t.match(outcome, { status: 503, message: /^The layout cannot start now: the compute queue is full \(1 running, 1 waiting\); try again shortly\.$/ }, `${outcome.transport} refused`)
    t.ok(Number(outcome.retryAfter) >= 1, `${outcome.transport} Retry-After: ${String(outcome.retryAfter)}`)
  }
  for (const outcome of await Promise.all(accepted)) {
    t.equal(outcome.status, 200, `${outcome.transport} accepted`)
    const places = (outcome.positions as Array<{ tileId: string, x: number, y: number }>).map(({ tileId, x, y }) => ({ tileId, x, y }))
    t.same(places, expected, 'the same layout as computed directly (each tile also with its version)')
  }
  const again = await viaRest()
  t.equal(again.status, 200, 'a drained queue accepts again')
})

t.test('a refused REST layout carries the full 503 envelope', async (t) => {
  const running = [viaRest(), viaRest()]
  await inPool(2)
  const res = await owner.rest('POST', '/api/canvas/layout/compute', { roomId, algorithm: 'force-directed' })
  t.equal(res.statusCode, 503)
  const body = res.json()
  t.match(body, { error: 'ServiceUnavailable', message: /compute queue is full/ })
  t.equal(String(body.retryAfter), res.headers['retry-after'], 'body and header agree')
  t.same((await Promise.all(running)).map((o) => o.status), [200, 200])
})
