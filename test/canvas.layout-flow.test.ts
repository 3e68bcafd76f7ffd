// A layout holds nothing back while it computes (issue 28 item 1): it is computed in the worker pool
// from a read of the room's tiles, outside any transaction, and written in a short transaction only
// if the tiles are still those it read. So while a layout of 1,000 tiles runs, and is computed again
// because a tile was added meanwhile, other rooms' events keep reaching their streams; the layout
// then covers the added tile. A room whose tiles keep changing during every attempt gets 409 /
// `aborted` and keeps its positions. (How fast events flow meanwhile is measured in
// bench/live-layouts.ts, never asserted here.) PGlite by default, Postgres when DATABASE_URL is set.
import t from 'tap'
import { Code, ConnectError } from '@connectrpc/connect'
import { CanvasService } from '../src/gen/app/canvas/v1/canvas_pb.js'
import { forceDirectedLayout } from '../src/core/canvas/layout.js'
import { LAYOUT_ATTEMPTS } from '../src/core/canvas/canvas.js'
import { startApp, uniqueClientIp } from './helpers/app.js'
import { recordEvents } from './helpers/events.js'
import { signInPerson } from './helpers/people.js'
import { openStream, sleep } from './helpers/sse.js'
import { seedTiles } from './helpers/tiles.js'

const s = await startApp()
t.teardown(s.close)
const bus = recordEvents(s)
t.teardown(bus.stop)
const owner = await signInPerson(s, 'layout-flow')

t.test('while a layout of 1,000 tiles runs (and runs again for a tile added meanwhile), another room\'s events keep flowing', async (t) => {
  const busy = (await owner.rest('POST', '/api/rooms', { name: 'Busy', isPublic: true })).json().data.id as string
  const seeded = await seedTiles(s, busy, owner.userId, 999)
  const quiet = (await owner.rest('POST', '/api/rooms', { name: 'Quiet', isPublic: false })).json().data.id as string
  const pawn = (await owner.rest('POST', '/api/sparks', { roomId: quiet, title: 'pawn', x: 0, y: 0 })).json().data.id as string
  const watcher = await openStream(s.url, { cookie: owner.cookie, headers: { 'x-forwarded-for': uniqueClientIp() } })
  t.teardown(() => { watcher.close() })

  let answered = false
  const layout = owner.rest('POST', '/api/canvas/layout/compute', { roomId: busy, algorithm: 'force-directed' }).finally(() => { answered = true })
  await sleep(100)
  const added = (await owner.rest('POST', '/api/sparks', { roomId: busy, title: 'added during the layout', x: 0, y: 0 })).json().data.id as string

  // One move at a time in the quiet room, each waited for on the stream, until the layout answers
  // (at most 40, well inside the canvas tier's 300 a minute).
  const deliveredDuring: number[] = []
  for (let x = 20; x <= 800; x += 20) {
    if (answered) break
    t.equal((await owner.rest('PATCH', '/api/canvas/position', { tileId: pawn, x, y: 0 })).statusCode, 200)
    await watcher.waitFor((m) => m.json.type === 'position:updated' && m.json.payload?.x === x, 30_000)
    if (!answered) deliveredDuring.push(x)
    await sleep(100)
  }
  t.ok(deliveredDuring.length >= 3, `${deliveredDuring.length} moves in the quiet room were written and delivered while the layout ran`)

  const res = await layout
  t.equal(res.statusCode, 200)
  const positions = res.json().data.positions as Array<{ tileId: string, x: number, y: number, version: number }>
  t.same(positions.map(({ tileId, x, y }) => ({ tileId, x, y })), forceDirectedLayout([...seeded, added]), 'the layout covers the tile added while it was computed')
  t.ok(positions.every((p) => p.version === 2), 'each tile written once, at version 2')
  t.same((await owner.rest('GET', `/api/canvas/state?roomId=${busy}`)).json().data.tiles, positions, 'persisted as answered')
  const event = await bus.waitFor((e) => e.type === 'layout:computed' && e.payload.roomId === busy)
  t.same(event.payload, { roomId: busy, positions })
})

t.test(`a room whose tiles change while each of ${LAYOUT_ATTEMPTS} attempts is computed: 409 / aborted, nothing written`, async (t) => {
  const host = await signInPerson(s, 'restless-host')
  const roomId = (await host.rest('POST', '/api/rooms', { name: 'Restless', isPublic: true })).json().data.id as string
  await seedTiles(s, roomId, host.userId, 500)
  // Visitors keep adding a tile and moving it, ten changes a second between them (each user's write
  // tier allows 100 a minute): the tiles change many times while any layout of the room is computed,
  // and never back to a state a layout was computed from.
  const visitors = await Promise.all(Array.from({ length: 8 }, async (_, i) => await signInPerson(s, `restless-${i}`)))
  const mark = bus.mark()
  const stop = { now: false }
  const churn = (async () => {
    for (let i = 0; !stop.now && i < 400; i++) {
      const visitor = visitors[i % visitors.length] ?? host
      const added = await visitor.rest('POST', '/api/sparks', { roomId, title: `restless ${i}`, x: 0, y: 0 })
      await sleep(50)
      if (added.statusCode === 201) await visitor.rest('PATCH', '/api/canvas/position', { tileId: added.json().data.id as string, x: 20, y: 20 })
      await sleep(50)
    }
  })()
  try {
    // Over REST and RPC at once (the churn lasts as long as the longer of the two).
    const [res, viaRpc] = await Promise.all([
      host.rest('POST', '/api/canvas/layout/compute', { roomId, algorithm: 'force-directed' }),
      host.rpc(CanvasService).computeLayout({ roomId, algorithm: 'force-directed' }).then(() => undefined, (error: unknown) => ConnectError.from(error))
    ])
    t.equal(res.statusCode, 409)
    t.same(res.json(), { error: 'Conflict', message: `The room's tiles kept changing while its layout was computed (${LAYOUT_ATTEMPTS} attempts); try again.` })
    t.equal(viaRpc?.code, Code.Aborted, 'RPC: aborted')
  } finally {
    stop.now = true
    await churn
  }
  const tiles = (await host.rest('GET', `/api/canvas/state?roomId=${roomId}`)).json().data.tiles as Array<{ x: number, y: number, version: number }>
  t.ok(tiles.every((tile) => (tile.version === 1 && tile.x !== 20) || (tile.version === 2 && tile.x === 20)), 'no tile was laid out: each is where it was created or moved to')
  await host.rest('POST', '/api/rooms', { name: 'marker', isPublic: false })
  await bus.waitFor((e) => e.type === 'room:created' && e.payload.name === 'marker', mark)
  t.equal(bus.matching((e) => e.type === 'layout:computed' && e.payload.roomId === roomId, mark).length, 0, 'and no layout:computed was published')
})
