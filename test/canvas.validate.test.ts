// ValidateLayout stays small whatever the room holds (DECISIONS §17): a room at its 1,000-tile limit
// with every tile on one spot holds 499,500 overlapping pairs; the answer on both transports and the
// `layout:validated` event on a real stream carry the first 100 issues in issue order, the exact
// count of all and `truncated`, each under 64 KB. A small room gets its full list; random rooms of a
// few hundred tiles agree with a pairwise count written here.
import t from 'tap'
import { create, fromBinary, toBinary } from '@bufbuild/protobuf'
import { CanvasService, ValidateLayoutRequestSchema, ValidateLayoutResponseSchema } from '../src/gen/app/canvas/v1/canvas_pb.js'
import { isOnGrid, tilesOverlap } from '../src/core/canvas/grid.js'
import { MAX_TILES_PER_ROOM } from '../src/core/canvas/tile-limit.js'
import type { TilePosition } from '../src/core/canvas/canvas.types.js'
import { startApp } from './helpers/app.js'
import { plain, signInPerson, type Person } from './helpers/people.js'
import { openStream } from './helpers/sse.js'
import { seedTiles } from './helpers/tiles.js'

const s = await startApp()
t.teardown(s.close)
const owner = await signInPerson(s, 'validator')
const member = await signInPerson(s, 'onlooker')

const KB64 = 64 * 1024

interface Issue { kind: string, tileIds: string[] }

async function publicRoom (name: string): Promise<string> {
  const res = await owner.rest('POST', '/api/rooms', { name, isPublic: true })
  if (res.statusCode !== 201) throw new Error(res.body)
  return res.json().data.id as string
}

/** The ValidateLayout answer as a raw Connect unary call, JSON or binary, and its size in bytes. */
async function rawRpcValidate (p: Person, roomId: string, binary: boolean): Promise<{ bytes: number, data: unknown }> {
  const res = await fetch(`${s.url}/rpc/app.canvas.v1.CanvasService/ValidateLayout`, {
    method: 'POST',
    headers: { authorization: `Bearer ${p.token}`, 'content-type': binary ? 'application/proto' : 'application/json' },
    body: binary ? toBinary(ValidateLayoutRequestSchema, create(ValidateLayoutRequestSchema, { roomId })) : JSON.stringify({ roomId })
  })
  const body = Buffer.from(await res.arrayBuffer())
  if (res.status !== 200) throw new Error(`${res.status} ${body.toString()}`)
  return { bytes: body.length, data: binary ? plain(fromBinary(ValidateLayoutResponseSchema, body)) : JSON.parse(body.toString()) }
}

/** Every issue by its O(n²) definition, in issue order (tileIds compared element by element). */
function pairwiseIssues (tiles: readonly TilePosition[]): Issue[] {
  const all: Issue[] = tiles.filter((a) => !isOnGrid(a)).map((a) => ({ kind: 'off-grid', tileIds: [a.tileId] }))
  for (let i = 0; i < tiles.length; i++) {
    for (let j = i + 1; j < tiles.length; j++) {
      const a = tiles[i] as TilePosition
      const b = tiles[j] as TilePosition
      if (tilesOverlap(a, b)) all.push({ kind: 'overlap', tileIds: a.tileId < b.tileId ? [a.tileId, b.tileId] : [b.tileId, a.tileId] })
    }
  }
  const order = (p: Issue, q: Issue): number => {
    for (let k = 0; k < Math.min(p.tileIds.length, q.tileIds.length); k++) {
      if (p.tileIds[k] !== q.tileIds[k]) return (p.tileIds[k] as string) < (q.tileIds[k] as string) ? -1 : 1
    }
    return p.tileIds.length - q.tileIds.length
  }
  return all.sort(order)
}

t.test('1,000 tiles on one spot: the first 100 issues, the exact count, truncated; answers and event under 64 KB', async (t) => {
  const roomId = await publicRoom('Pile')
  // Off the grid, so the order shows how off-grid issues interleave with overlaps.
  const ids = (await seedTiles(s, roomId, owner.userId, MAX_TILES_PER_ROOM, () => ({ x: 10, y: 10 }))).sort()
  t.equal((await member.rest('GET', `/api/canvas/state?roomId=${roomId}`)).statusCode, 200, 'the member opens the room')
  const stream = await openStream(s.url, { cookie: member.cookie })
  t.teardown(() => { stream.close() })

  const expected = {
    roomId,
    valid: false,
    issues: [
      { kind: 'off-grid', tileIds: [ids[0]] },
      ...ids.slice(1, 100).map((other) => ({ kind: 'overlap', tileIds: [ids[0], other] }))
    ],
    issueCount: MAX_TILES_PER_ROOM + MAX_TILES_PER_ROOM * (MAX_TILES_PER_ROOM - 1) / 2,
    truncated: true
  }
  const rest = await owner.rest('POST', '/api/canvas/layout/validate', { roomId })
  t.equal(rest.statusCode, 200)
  t.same(rest.json().data, expected, 'REST: 100 issues, a tile\'s off-grid issue before its overlaps, every issue counted')
  t.ok(rest.rawPayload.length <= KB64, `REST answer: ${rest.rawPayload.length} bytes`)

  const event = await stream.waitFor((m) => m.json.type === 'layout:validated' && m.json.payload?.roomId === roomId)
  t.same(event.json.payload, expected, 'the event carries the same')
  t.ok(Buffer.byteLength(event.data) <= KB64, `event on the stream: ${Buffer.byteLength(event.data)} bytes`)

  for (const binary of [false, true]) {
    const rpc = await rawRpcValidate(owner, roomId, binary)
    t.same(rpc.data, expected, `RPC ${binary ? 'binary' : 'JSON'} answers the same`)
    t.ok(rpc.bytes <= KB64, `RPC ${binary ? 'binary' : 'JSON'} answer: ${rpc.bytes} bytes`)
  }
  t.same(plain(await member.rpc(CanvasService, { binary: true }).validateLayout({ roomId })), expected, 'RPC through a Connect client, as another member')
})

t.test('1,000 tiles on one grid spot: only overlaps, n·(n−1)/2 of them', async (t) => {
  const roomId = await publicRoom('Stack')
  const ids = (await seedTiles(s, roomId, owner.userId, MAX_TILES_PER_ROOM, () => ({ x: 200, y: 120 }))).sort()
  const data = (await owner.rest('POST', '/api/canvas/layout/validate', { roomId })).json().data
  t.same(data.issues, ids.slice(1, 101).map((other) => ({ kind: 'overlap', tileIds: [ids[0], other] })))
  t.equal(data.issueCount, 499_500)
  t.equal(data.truncated, true)
  const rpc = await owner.rpc(CanvasService).validateLayout({ roomId })
  t.equal(rpc.issueCount, 499_500, 'RPC issue_count')
  t.equal(rpc.issues.length, 100)
})

t.test('a small room: every issue, truncated false; a clean one: valid, 0 issues', async (t) => {
  const roomId = await publicRoom('Few')
  const places: Array<[number, number]> = [[0, 0], [33, 47], [1000, 0], [1100, 60], [3000, 3000]]
  const ids: string[] = []
  for (const [x, y] of places) ids.push((await owner.rest('POST', '/api/sparks', { roomId, title: 'tile', x, y })).json().data.id as string)
  const [a, b, c, d] = ids as [string, string, string, string]
  const expected = { roomId, valid: false, issues: pairwiseIssues([{ tileId: a, x: 0, y: 0 }, { tileId: b, x: 33, y: 47 }, { tileId: c, x: 1000, y: 0 }, { tileId: d, x: 1100, y: 60 }]), issueCount: 3, truncated: false }
  t.equal(expected.issues.length, 3)
  t.same((await owner.rest('POST', '/api/canvas/layout/validate', { roomId })).json().data, expected, 'REST')
  for (const binary of [false, true]) t.same(plain(await owner.rpc(CanvasService, { binary }).validateLayout({ roomId })), expected, `RPC ${binary ? 'binary' : 'JSON'}`)

  const clean = await publicRoom('Clean')
  await seedTiles(s, clean, owner.userId, 3, (i) => ({ x: i * 200, y: 0 }))
  const none = { roomId: clean, valid: true, issues: [], issueCount: 0, truncated: false }
  t.same((await owner.rest('POST', '/api/canvas/layout/validate', { roomId: clean })).json().data, none)
  t.same(plain(await owner.rpc(CanvasService).validateLayout({ roomId: clean })), none, 'RPC sends the zero count and false too')
})

t.test('random rooms of a few hundred tiles: the count and the first 100 agree with the pairwise check', async (t) => {
  let seed = 20_261_201
  const random = (): number => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648 }
  const layouts: Array<{ count: number, place: (i: number) => { x: number, y: number } }> = [
    { count: 300, place: () => ({ x: Math.floor(random() * 60) * 20, y: Math.floor(random() * 50) * 20 }) },
    { count: 250, place: () => ({ x: random() * 6000 - 3000, y: random() * 4000 - 2000 }) },
    { count: 400, place: (i) => i % 5 === 0 ? { x: 13.5, y: 7.25 } : { x: Math.floor(random() * 100) * 20, y: Math.floor(random() * 80) * 12 } }
  ]
  for (const [n, { count, place }] of layouts.entries()) {
    const roomId = await publicRoom(`Random ${n}`)
    await seedTiles(s, roomId, owner.userId, count, place)
    const tiles = (await owner.rest('GET', `/api/canvas/state?roomId=${roomId}`)).json().data.tiles as TilePosition[]
    t.equal(tiles.length, count)
    const brute = pairwiseIssues(tiles)
    const rest = (await owner.rest('POST', '/api/canvas/layout/validate', { roomId })).json().data
    t.equal(rest.issueCount, brute.length, `layout ${n}: ${brute.length} issues counted (REST)`)
    t.same(rest.issues, brute.slice(0, 100), `layout ${n}: the first ${Math.min(100, brute.length)} in order`)
    t.equal(rest.truncated, brute.length > 100)
    t.equal(rest.valid, brute.length === 0)
    const rpc = await owner.rpc(CanvasService, { binary: n % 2 === 1 }).validateLayout({ roomId })
    t.same(plain(rpc), rest, `layout ${n}: RPC answers the same`)
  }
})
