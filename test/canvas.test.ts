// The canvas on both transports: single moves (snap, collision), atomic batches, layouts
// (force-directed: on the grid, no overlaps, repeatable, independent of current positions; grid),
// validation, canvas state, concurrent moves, and the events of each write.
import t from 'tap'
import { Code } from '@connectrpc/connect'
import { CanvasService } from '../src/gen/app/canvas/v1/canvas_pb.js'
import { BadRequestSchema } from '../src/gen/google/rpc/error_details_pb.js'
import { isOnGrid, tilesOverlap } from '../src/core/canvas/grid.js'
import type { TilePosition } from '../src/core/canvas/canvas.types.js'
import { startApp } from './helpers/app.js'
import { recordEvents } from './helpers/events.js'
import { plain, rpcError, signInPerson, type Person } from './helpers/people.js'

const s = await startApp()
t.teardown(s.close)
const bus = recordEvents(s)
t.teardown(bus.stop)

async function roomWithTiles (owner: Person, positions: Array<[number, number]>, isPublic = true): Promise<{ roomId: string, ids: string[] }> {
  const room = await owner.rest('POST', '/api/rooms', { name: 'Canvas', isPublic })
  if (room.statusCode !== 201) throw new Error(room.body)
  const roomId = room.json().data.id as string
  const ids: string[] = []
  for (const [x, y] of positions) {
    const res = await owner.rest('POST', '/api/sparks', { title: 'tile', roomId, x, y })
    if (res.statusCode !== 201) throw new Error(res.body)
    ids.push(res.json().data.id)
  }
  return { roomId, ids }
}

async function tiles (p: Person, roomId: string): Promise<TilePosition[]> {
  const res = await p.rest('GET', `/api/canvas/state?roomId=${roomId}`)
  if (res.statusCode !== 200) throw new Error(res.body)
  return res.json().data.tiles
}

async function versions (p: Person, ids: readonly string[]): Promise<number[]> {
  return await Promise.all(ids.map(async (id) => (await p.rest('GET', `/api/sparks/${id}`)).json().data.version as number))
}

/** Positions without their versions (a layout's places depend on the tile ids alone; versions grow). */
function places (list: readonly TilePosition[]): TilePosition[] {
  return list.map(({ tileId, x, y }) => ({ tileId, x, y }))
}

function overlapping (list: readonly TilePosition[]): string[] {
  const pairs: string[] = []
  for (let i = 0; i < list.length; i++) {
    for (let j = i + 1; j < list.length; j++) {
      if (tilesOverlap(list[i] as TilePosition, list[j] as TilePosition)) pairs.push(`${list[i]?.tileId}/${list[j]?.tileId}`)
    }
  }
  return pairs
}

t.test('UpdatePosition: snap (33,47 → 40,40), no snap (40,60), collision flag; REST and RPC alike; position:updated', async (t) => {
  const owner = await signInPerson(s, 'positioner')
  const { roomId, ids: [a, b] } = await roomWithTiles(owner, [[0, 0], [1000, 1000]])

  const snapped = await owner.rest('PATCH', '/api/canvas/position', { tileId: b, x: 33, y: 47 })
  t.equal(snapped.statusCode, 200)
  t.same(snapped.json(), { data: { tileId: b, x: 40, y: 40, version: 2, snapped: true, collisionDetected: true } }, 'b now overlaps a; the spark\'s version after the move')
  const event = await bus.waitFor((e) => e.type === 'position:updated' && e.payload.tileId === b)
  t.same(event.payload, snapped.json().data)
  t.same(event.audience, { kind: 'room', roomId, sparkId: b }, 'a spark\'s event names it: a hidden spark\'s reach its creator alone')
  t.equal(event.userId, owner.userId)

  const exact = await owner.rpc(CanvasService).updatePosition({ tileId: b, x: 40, y: 60 })
  t.same(plain(exact.position), { tileId: b, x: 40, y: 60, version: 3, snapped: false, collisionDetected: true })
  const apart = await owner.rpc(CanvasService, { binary: true }).updatePosition({ tileId: b, x: 200, y: 0 })
  t.same(plain(apart.position), { tileId: b, x: 200, y: 0, version: 4, snapped: false, collisionDetected: false }, 'touching edges do not collide')
  const stacked = await owner.rest('PATCH', '/api/canvas/position', { tileId: b, x: 10, y: 115 })
  t.same(stacked.json().data, { tileId: b, x: 20, y: 120, version: 5, snapped: true, collisionDetected: false })
  t.same(await tiles(owner, roomId), [{ tileId: a, x: 0, y: 0, version: 1 }, { tileId: b, x: 20, y: 120, version: 5 }].sort((p, q) => p.tileId < q.tileId ? -1 : 1))

  // Every move of b so far has been delivered (the last one made version 5) before the mark.
  await bus.waitFor((e) => e.type === 'position:updated' && e.payload.tileId === b && e.payload.version === 5)
  const mark = bus.mark()
  for (const body of [{ tileId: b, x: 0 }, { tileId: b, x: '1', y: 0 }, { tileId: b, x: 0, y: 2_000_000 }, { x: 0, y: 0 }]) {
    t.equal((await owner.rest('PATCH', '/api/canvas/position', body)).statusCode, 400, JSON.stringify(body))
  }
  const noY = await rpcError(owner.rpc(CanvasService, { binary: true }).updatePosition({ tileId: b, x: 0 }))
  t.same(noY.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => [v.field, v.description]), [['y', 'is required']])
  t.equal((await rpcError(owner.rpc(CanvasService).updatePosition({ tileId: b, x: Number.NaN, y: 0 }))).code, Code.InvalidArgument)
  t.equal((await owner.rest('PATCH', '/api/canvas/position', { tileId: 'spark_missing', x: 0, y: 0 })).statusCode, 404)
  t.equal((await rpcError(owner.rpc(CanvasService).updatePosition({ tileId: 'spark_missing', x: 0, y: 0 }))).code, Code.NotFound)
  await owner.rest('PATCH', '/api/canvas/position', { tileId: a, x: 600, y: 0 })
  await bus.waitFor((e) => e.type === 'position:updated' && e.payload.tileId === a, mark)
  t.equal(bus.matching((e) => e.type === 'position:updated' && e.payload.tileId === b, mark).length, 0, 'failed moves published nothing')
})

t.test('BatchUpdatePositions: one result per update in order, positions:batch-updated, atomic all-or-none', async (t) => {
  const owner = await signInPerson(s, 'batcher')
  const stranger = await signInPerson(s, 'stranger')
  const { roomId, ids } = await roomWithTiles(owner, [[0, 0], [300, 0], [600, 0]])
  const [a, b, c] = ids as [string, string, string]
  const foreign = (await roomWithTiles(stranger, [[0, 0]], false)).ids[0] as string

  const batch = await owner.rest('PATCH', '/api/canvas/positions/batch', { updates: [{ tileId: c, x: 33, y: 47 }, { tileId: a, x: 1000, y: 1000 }, { tileId: b, x: 60, y: 100 }] })
  t.equal(batch.statusCode, 200)
  t.same(batch.json(), {
    data: {
      positions: [
        { tileId: c, x: 40, y: 40, version: 2, snapped: true, collisionDetected: true },
        { tileId: a, x: 1000, y: 1000, version: 2, snapped: false, collisionDetected: false },
        { tileId: b, x: 60, y: 100, version: 2, snapped: false, collisionDetected: true }
      ]
    }
  }, 'collisions are judged on the final positions of the whole batch')
  const event = await bus.waitFor((e) => e.type === 'positions:batch-updated' && e.payload.updates.some((u) => u.tileId === a))
  t.same(event.payload, { updates: [{ tileId: c, x: 40, y: 40, version: 2 }, { tileId: a, x: 1000, y: 1000, version: 2 }, { tileId: b, x: 60, y: 100, version: 2 }] })
  t.same(event.audience, { kind: 'room', roomId })
  t.equal(event.userId, owner.userId)

  const viaRpc = await owner.rpc(CanvasService, { binary: true }).batchUpdatePositions({ updates: [{ tileId: a, x: 0, y: 0 }, { tileId: b, x: 400, y: 0 }, { tileId: c, x: 800, y: 0 }] })
  t.same(plain(viaRpc.positions), [
    { tileId: a, x: 0, y: 0, version: 3, snapped: false, collisionDetected: false },
    { tileId: b, x: 400, y: 0, version: 3, snapped: false, collisionDetected: false },
    { tileId: c, x: 800, y: 0, version: 3, snapped: false, collisionDetected: false }
  ])

  const before = await tiles(owner, roomId)
  const versionsBefore = await versions(owner, ids)
  await bus.waitFor((e) => e.type === 'positions:batch-updated' && e.payload.updates.length === 3 && e.payload.updates[0]?.tileId === a)
  const mark = bus.mark()
  const withMissing = await owner.rest('PATCH', '/api/canvas/positions/batch', { updates: [{ tileId: a, x: 2000, y: 0 }, { tileId: 'spark_missing', x: 0, y: 0 }] })
  t.equal(withMissing.statusCode, 404, 'one missing tile: the whole batch is refused')
  t.match(withMissing.json().message, /updates\[1\]\.tileId/)
  const withForeign = await rpcError(owner.rpc(CanvasService).batchUpdatePositions({ updates: [{ tileId: b, x: 2000, y: 0 }, { tileId: foreign, x: 0, y: 0 }] }))
  t.equal(withForeign.code, Code.NotFound, 'a tile in someone else\'s private room does not exist')
  const invalidOne = await owner.rest('PATCH', '/api/canvas/positions/batch', { updates: [{ tileId: a, x: 2000, y: 0 }, { tileId: b, x: 0 }] })
  t.equal(invalidOne.statusCode, 400)
  t.equal(invalidOne.json().details[0].field, 'updates[1].y')
  const duplicate = await owner.rest('PATCH', '/api/canvas/positions/batch', { updates: [{ tileId: a, x: 2000, y: 0 }, { tileId: a, x: 0, y: 0 }] })
  t.equal(duplicate.statusCode, 400, 'the same tile twice')
  t.equal(duplicate.json().details[0].field, 'updates[1].tileId')
  const tooMany = await owner.rest('PATCH', '/api/canvas/positions/batch', { updates: Array.from({ length: 101 }, (_, i) => ({ tileId: `t${i}`, x: 0, y: 0 })) })
  t.equal(tooMany.statusCode, 400, 'at most 100 entries')
  t.same(tooMany.json().details, [{ field: 'updates', issue: 'must have at most 100 items' }])
  t.equal((await owner.rest('PATCH', '/api/canvas/positions/batch', { updates: [] })).statusCode, 400, 'at least one entry')
  t.equal((await rpcError(owner.rpc(CanvasService).batchUpdatePositions({ updates: [] }))).code, Code.InvalidArgument)
  t.same(await tiles(owner, roomId), before, 'nothing moved')
  t.same(await versions(owner, ids), versionsBefore, 'no version changed')
  t.same(await tiles(stranger, (await stranger.rest('GET', `/api/sparks/${foreign}`)).json().data.roomId), [{ tileId: foreign, x: 0, y: 0, version: 1 }], 'the foreign tile did not move')

  await owner.rest('PATCH', '/api/canvas/positions/batch', { updates: [{ tileId: c, x: 1600, y: 0 }] })
  await bus.waitFor((e) => e.type === 'positions:batch-updated' && e.payload.updates[0]?.tileId === c && e.payload.updates[0]?.x === 1600, mark)
  t.equal(bus.matching((e) => e.type === 'positions:batch-updated', mark).length, 1, 'refused batches published nothing')
})

t.test('layout of 50 tiles: on the grid, no overlaps, same result twice and after shuffling; layout:computed', async (t) => {
  const owner = await signInPerson(s, 'layouter')
  const start: Array<[number, number]> = Array.from({ length: 50 }, (_, i) => [(i % 5) * 7, Math.floor(i / 5) * 3])
  const { roomId, ids } = await roomWithTiles(owner, start)

  const computed = await owner.rest('POST', '/api/canvas/layout/compute', { roomId, algorithm: 'force-directed' })
  t.equal(computed.statusCode, 200)
  const { data } = computed.json() as { data: { roomId: string, positions: TilePosition[] } }
  t.equal(data.roomId, roomId)
  t.same(data.positions.map((p) => p.tileId), [...ids].sort(), 'every tile, in id order')
  t.ok(data.positions.every(isOnGrid), 'every tile on the 20-unit grid')
  t.same(overlapping(data.positions), [], 'no two tiles overlap')
  t.same(await tiles(owner, roomId), data.positions, 'the layout is persisted')
  t.ok(data.positions.every((p) => (p as TilePosition & { version: number }).version === 2), 'each tile with its version after the layout')
  const event = await bus.waitFor((e) => e.type === 'layout:computed' && e.payload.roomId === roomId)
  t.same(event.payload, data)
  t.same(event.audience, { kind: 'room', roomId })
  t.equal(event.userId, owner.userId)

  const again = await owner.rpc(CanvasService, { binary: true }).computeLayout({ roomId, algorithm: 'force-directed' })
  t.same(places(again.positions), places(data.positions), 'the same result twice (and over RPC)')
  t.ok(again.positions.every((p) => p.version === 3), 'one version later')

  const shuffled = ids.map((tileId, i) => ({ tileId, x: ((i * 7919) % 5000) - 2500, y: ((i * 104729) % 3000) - 1500 }))
  const moved = await owner.rest('PATCH', '/api/canvas/positions/batch', { updates: shuffled })
  t.equal(moved.statusCode, 200)
  const afterShuffle = await owner.rest('POST', '/api/canvas/layout/compute', { roomId, algorithm: 'force-directed' })
  t.same(places(afterShuffle.json().data.positions), places(data.positions), 'the result does not depend on current positions')

  const validated = await owner.rpc(CanvasService).validateLayout({ roomId })
  t.same(plain(validated), { roomId, valid: true, issues: [], issueCount: 0, truncated: false })

  const grid = await owner.rest('POST', '/api/canvas/layout/compute', { roomId, algorithm: 'grid' })
  t.equal(grid.statusCode, 200)
  t.ok(grid.json().data.positions.every(isOnGrid))
  t.same(overlapping(grid.json().data.positions), [])
  t.same(grid.json().data.positions[1], { tileId: [...ids].sort()[1], x: 220, y: 0, version: 6 })
})

t.test('ComputeLayout: unknown algorithm is a validation error; an empty room lays out to nothing', async (t) => {
  const owner = await signInPerson(s, 'algo')
  const { roomId } = await roomWithTiles(owner, [])
  const mark = bus.mark()
  const unknown = await owner.rest('POST', '/api/canvas/layout/compute', { roomId, algorithm: 'circular' })
  t.equal(unknown.statusCode, 400)
  t.same(unknown.json().details, [{ field: 'algorithm', issue: 'must be one of: force-directed, grid' }])
  const viaRpc = await rpcError(owner.rpc(CanvasService).computeLayout({ roomId, algorithm: 'random' }))
  t.equal(viaRpc.code, Code.InvalidArgument)
  t.equal(viaRpc.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field, 'algorithm')
  t.equal((await owner.rest('POST', '/api/canvas/layout/compute', { roomId })).statusCode, 400, 'algorithm is required')
  t.equal((await owner.rest('POST', '/api/canvas/layout/compute', { roomId: 'room_missing', algorithm: 'grid' })).statusCode, 404)
  const empty = await owner.rest('POST', '/api/canvas/layout/compute', { roomId, algorithm: 'force-directed' })
  t.same(empty.json(), { data: { roomId, positions: [] } })
  await bus.waitFor((e) => e.type === 'layout:computed' && e.payload.roomId === roomId, mark)
  t.equal(bus.matching((e) => e.type === 'layout:computed' && e.payload.roomId === roomId, mark).length, 1, 'failed layouts published nothing')
})

t.test('ValidateLayout reports off-grid tiles and overlapping pairs; layout:validated', async (t) => {
  const owner = await signInPerson(s, 'checker')
  const { roomId, ids } = await roomWithTiles(owner, [[0, 0], [33, 47], [1000, 0], [1100, 60]])
  const [a, b, c, d] = ids as [string, string, string, string]
  const res = await owner.rest('POST', '/api/canvas/layout/validate', { roomId })
  t.equal(res.statusCode, 200)
  const pair = (x: string, y: string): string[] => [x, y].sort()
  const expected = {
    roomId,
    valid: false,
    issues: [
      { kind: 'off-grid', tileIds: [b] },
      ...[pair(a, b), pair(c, d)].sort((p, q) => p[0]! < q[0]! ? -1 : 1).map((tileIds) => ({ kind: 'overlap', tileIds }))
    ].sort((p, q) => p.tileIds.join(' ') < q.tileIds.join(' ') ? -1 : 1),
    issueCount: 3,
    truncated: false
  }
  t.same(res.json().data, expected)
  const event = await bus.waitFor((e) => e.type === 'layout:validated' && e.payload.roomId === roomId)
  t.same(event.payload, expected)
  t.same(event.audience, { kind: 'room', roomId })
  t.same(plain(await owner.rpc(CanvasService, { binary: true }).validateLayout({ roomId })), expected, 'RPC answers the same')
  t.equal((await owner.rest('POST', '/api/canvas/layout/validate', {})).statusCode, 400)
})

t.test('GetCanvasState: grid geometry and tiles, the same on both transports', async (t) => {
  const owner = await signInPerson(s, 'viewer')
  const { roomId, ids } = await roomWithTiles(owner, [[0, 0], [240, 20]])
  const res = await owner.rest('GET', `/api/canvas/state?roomId=${roomId}`)
  t.equal(res.statusCode, 200)
  const state = res.json().data
  t.same({ ...state, tiles: undefined }, { roomId, gridSize: 20, tileWidth: 200, tileHeight: 120, tiles: undefined })
  t.same([...state.tiles].sort((p: TilePosition, q: TilePosition) => p.tileId < q.tileId ? -1 : 1), state.tiles, 'tiles in id order')
  t.same(state.tiles.map((p: TilePosition) => p.tileId), [...ids].sort())
  for (const binary of [false, true]) t.same(plain(await owner.rpc(CanvasService, { binary }).getCanvasState({ roomId })), state)
  t.equal((await owner.rest('GET', '/api/canvas/state')).statusCode, 400, 'roomId is required')
  t.equal((await rpcError(owner.rpc(CanvasService).getCanvasState({ roomId: '' }))).code, Code.InvalidArgument)
})

t.test('concurrent moves of one tile from many clients: every move applied once, nothing lost', async (t) => {
  const owner = await signInPerson(s, 'crowd-owner')
  const others = await Promise.all([signInPerson(s, 'crowd1'), signInPerson(s, 'crowd2')])
  const { roomId, ids: [tile] } = await roomWithTiles(owner, [[0, 0]])
  const tileId = tile as string
  const clients = [owner, ...others]
  const requested = Array.from({ length: 24 }, (_, i) => ({ x: i * 20, y: i * 40 }))
  const results = await Promise.all(requested.map(async (p, i) => {
    const who = clients[i % clients.length] as Person
    if (i % 2 === 0) return (await who.rest('PATCH', '/api/canvas/position', { tileId, ...p })).statusCode
    await who.rpc(CanvasService, { binary: i % 4 === 1 }).updatePosition({ tileId, ...p })
    return 200
  }))
  t.ok(results.every((status) => status === 200), 'every move succeeded')
  const spark = (await owner.rest('GET', `/api/sparks/${tileId}`)).json().data
  t.equal(spark.version, 1 + requested.length, 'each move counted exactly once')
  t.ok(requested.some((p) => p.x === spark.x && p.y === spark.y), 'the tile is where one of the moves put it')
  t.same((await owner.rest('GET', `/api/sparks?roomId=${roomId}`)).json().pagination.total, 1, 'still exactly one row')
})

t.test('concurrent batches over overlapping tiles in opposite orders: all applied, none half-applied', async (t) => {
  const owner = await signInPerson(s, 'batch-crowd')
  const { ids } = await roomWithTiles(owner, Array.from({ length: 6 }, (_, i): [number, number] => [i * 220, 0]))
  const batches = Array.from({ length: 10 }, (_, n) => {
    const order = n % 2 === 0 ? ids : [...ids].reverse()
    return order.map((tileId, i) => ({ tileId, x: n * 2000 + i * 220, y: n * 200 }))
  })
  const statuses = await Promise.all(batches.map(async (updates) => (await owner.rest('PATCH', '/api/canvas/positions/batch', { updates })).statusCode))
  t.same(statuses, batches.map(() => 200), 'no batch failed (no deadlock)')
  t.same(await versions(owner, ids), ids.map(() => 1 + batches.length), 'every batch moved every tile once')
  const final = await Promise.all(ids.map(async (id) => (await owner.rest('GET', `/api/sparks/${id}`)).json().data as { y: number }))
  t.equal(new Set(final.map((f) => f.y)).size, 1, 'all tiles carry the same (last) batch: none was half-applied')
})
