// Layouts run in the worker pool (src/compute): the result is exactly the in-process computation,
// on both transports, and while several layouts of a full room (1,000 tiles) run, the event loop
// stays responsive — its longest delay far below what one layout takes on it — and /health answers
// before they finish.
import t from 'tap'
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import { CanvasService } from '../src/gen/app/canvas/v1/canvas_pb.js'
import type { TilePosition, TileState } from '../src/core/canvas/canvas.types.js'
import { forceDirectedLayout, gridLayout } from '../src/core/canvas/layout.js'
import { MAX_TILES_PER_ROOM } from '../src/core/canvas/tile-limit.js'
import { startApp } from './helpers/app.js'
import { plain, signInPerson } from './helpers/people.js'
import { seedTiles } from './helpers/tiles.js'

const s = await startApp()
t.teardown(s.close)
const owner = await signInPerson(s, 'layouter')

async function fullRoom (): Promise<{ roomId: string, ids: string[] }> {
  const roomId = (await owner.rest('POST', '/api/rooms', { name: 'Full canvas', isPublic: true })).json().data.id as string
  return { roomId, ids: await seedTiles(s, roomId, owner.userId, MAX_TILES_PER_ROOM) }
}

/** How long one layout of these ids takes on this thread: the fastest of two runs (JIT warm). */
function directLayoutMs (ids: readonly string[]): number {
  let fastest = Infinity
  for (let i = 0; i < 2; i++) {
    const started = performance.now()
    forceDirectedLayout(ids)
    fastest = Math.min(fastest, performance.now() - started)
  }
  return fastest
}

t.test('a pooled layout of 1,000 tiles is exactly the direct computation, on REST and RPC (JSON and binary)', async (t) => {
  const { roomId, ids } = await fullRoom()
  const expected = forceDirectedLayout(ids)
  const viaRest = await owner.rest('POST', '/api/canvas/layout/compute', { roomId, algorithm: 'force-directed' })
  t.equal(viaRest.statusCode, 200)
  // Each tile also carries its spark's version after the write: 2 after the first layout, then 3, 4.
  const versioned = (positions: readonly TilePosition[], version: number): TileState[] => positions.map((p) => ({ ...p, version }))
  t.same(viaRest.json().data, { roomId, positions: versioned(expected, 2) })
  t.same(plain((await owner.rpc(CanvasService, { binary: true }).computeLayout({ roomId, algorithm: 'force-directed' })).positions), versioned(expected, 3))
  t.same((await owner.rest('GET', `/api/canvas/state?roomId=${roomId}`)).json().data.tiles, versioned(expected, 3), 'persisted')
  t.same(plain((await owner.rpc(CanvasService).computeLayout({ roomId, algorithm: 'grid' })).positions), versioned(gridLayout(ids), 4), 'grid too')
})

t.test('while 3 layouts of 1,000 tiles run, the event loop stays responsive and /health answers before they finish', async (t) => {
  const rooms = await Promise.all([fullRoom(), fullRoom(), fullRoom()])
  const oneLayoutMs = directLayoutMs(rooms[0]?.ids ?? [])

  const delay = monitorEventLoopDelay({ resolution: 10 })
  delay.enable()
  const started = performance.now()
  const layouts = rooms.map(async ({ roomId }) => {
    const res = await owner.rest('POST', '/api/canvas/layout/compute', { roomId, algorithm: 'force-directed' })
    return { status: res.statusCode, doneAt: performance.now() - started }
  })
  await new Promise((resolve) => setTimeout(resolve, 100)) // the first layout is in a worker by now
  const healthSentAt = performance.now() - started
  const health = await fetch(`${s.url}/health`)
  const healthAt = performance.now() - started
  const done = await Promise.all(layouts)
  delay.disable()

  const maxDelayMs = delay.max / 1e6
  const lastDoneAt = Math.max(...done.map((d) => d.doneAt))
  t.same(done.map((d) => d.status), [200, 200, 200])
  t.equal(health.status, 200)
  t.ok(healthAt < lastDoneAt, `/health (sent at ${healthSentAt.toFixed(0)} ms) answered at ${healthAt.toFixed(0)} ms, the last layout at ${lastDoneAt.toFixed(0)} ms`)
  // A layout run on this thread would block it for a whole layout; the quarter left is for the
  // scheduler, which pauses this process now and then while other test files run beside it.
  t.ok(maxDelayMs < oneLayoutMs * 0.75, `longest event-loop delay ${maxDelayMs.toFixed(0)} ms (p99 ${(delay.percentile(99) / 1e6).toFixed(0)} ms) < three quarters of one layout on this thread (${oneLayoutMs.toFixed(0)} ms)`)
})
