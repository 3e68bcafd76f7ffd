// A spark hidden by moderation does not exist on the canvas for anyone but its creator (DECISIONS
// §17), on both transports: another member's (or the room creator's) layout neither answers nor
// moves it, their moves and batches naming it are 404 / NOT_FOUND like a missing tile, their
// collisions and validations ignore it, and the canvas state leaves it out. Its creator's own
// operations still see it, and what they publish to the whole room never reveals it.
import t from 'tap'
import { Code } from '@connectrpc/connect'
import { CanvasService } from '../src/gen/app/canvas/v1/canvas_pb.js'
import { SparksService } from '../src/gen/app/sparks/v1/sparks_pb.js'
import type { AdminActor } from '../src/core/actor.js'
import type { AnyEvent } from '../src/core/events.js'
import { takeAction } from '../src/core/moderation/moderation.js'
import { inTransaction } from '../src/core/transaction.js'
import { startApp } from './helpers/app.js'
import { recordEvents } from './helpers/events.js'
import { plain, rpcError, signInPerson, type Person } from './helpers/people.js'

const s = await startApp()
t.teardown(s.close)
const bus = recordEvents(s)
t.teardown(bus.stop)
const admin: AdminActor = { sub: 'admin-canvas', email: 'mod@example.test', role: 'admin', requestId: 'test' }

const owner = await signInPerson(s, 'room-owner')
const author = await signInPerson(s, 'author')
const member = await signInPerson(s, 'member')
/** Everyone but the hidden spark's creator: a member, and the room's own creator. */
const others: Array<[string, Person]> = [['a member', member], ['the room\'s creator', owner]]

interface Room { roomId: string, hidden: string, authorTile: string, ownerTile: string }

async function spark (p: Person, roomId: string, x: number, y: number): Promise<string> {
  const res = await p.rest('POST', '/api/sparks', { roomId, title: 'tile', x, y })
  if (res.statusCode !== 201) throw new Error(res.body)
  return res.json().data.id as string
}

/** A public room with the author's spark at (0, 0), hidden by a moderator, and two visible tiles. */
async function roomWithHiddenSpark (): Promise<Room> {
  const roomId = (await owner.rest('POST', '/api/rooms', { name: 'Hidden corner', isPublic: true })).json().data.id as string
  const hidden = await spark(author, roomId, 0, 0)
  const authorTile = await spark(author, roomId, 1000, 0)
  const ownerTile = await spark(owner, roomId, 2000, 0)
  const opened = await member.rest('GET', `/api/canvas/state?roomId=${roomId}`)
  if (opened.statusCode !== 200) throw new Error(opened.body)
  await inTransaction(s.app.deps, async (tx) => await takeAction(tx, s.app.deps, admin, { kind: 'hide', targetType: 'spark', targetId: hidden }))
  // Hiding tells the others the spark is gone (spark:deleted): delivered before the tests below mark
  // the bus, so that only what they cause comes after their mark (on Postgres delivery may lag).
  await bus.waitFor((e) => e.type === 'spark:deleted' && e.payload.id === hidden)
  return { roomId, hidden, authorTile, ownerTile }
}

/** The spark as its creator reads it. */
async function stateOf (id: string): Promise<{ x: number, y: number, version: number }> {
  const { x, y, version } = (await author.rest('GET', `/api/sparks/${id}`)).json().data
  return { x, y, version }
}

const mentions = (id: string) => (e: AnyEvent): boolean => JSON.stringify(e.payload).includes(id)

t.test('layouts: another user\'s neither answers nor moves a hidden spark; its creator\'s lays it out and tells only them', async (t) => {
  const room = await roomWithHiddenSpark()
  const { roomId, hidden } = room
  const before = await stateOf(hidden)
  const visible = [room.authorTile, room.ownerTile].sort()
  for (const [who, p] of others) {
    const mark = bus.mark()
    const rest = await p.rest('POST', '/api/canvas/layout/compute', { roomId, algorithm: 'grid' })
    t.equal(rest.statusCode, 200)
    t.same(rest.json().data.positions.map((q: { tileId: string }) => q.tileId), visible, `${who}'s layout (REST) answers the visible tiles only`)
    const rpc = await p.rpc(CanvasService, { binary: true }).computeLayout({ roomId, algorithm: 'force-directed' })
    t.same(rpc.positions.map((q) => q.tileId), visible, `${who}'s layout (RPC) too`)
    t.same(await stateOf(hidden), before, `${who}'s layouts did not move it (position and version as they were)`)
    // A marker published after both layouts: the bus delivers in order, so their events came before it.
    await p.rest('POST', '/api/canvas/layout/validate', { roomId })
    await bus.waitFor((e) => e.type === 'layout:validated' && e.payload.roomId === roomId, mark)
    t.equal(bus.matching((e) => e.type === 'layout:computed' && e.payload.roomId === roomId, mark).length, 2, 'both layouts were published')
    t.same(bus.matching(mentions(hidden), mark), [], 'no event of theirs names it')
  }

  const mark = bus.mark()
  const mine = (await author.rest('POST', '/api/canvas/layout/compute', { roomId, algorithm: 'grid' })).json().data
  t.same(mine.positions.map((q: { tileId: string }) => q.tileId), [...visible, hidden].sort(), 'its creator\'s layout (REST) includes it')
  const placed = mine.positions.find((q: { tileId: string }) => q.tileId === hidden)
  t.same(await stateOf(hidden), { x: placed.x, y: placed.y, version: before.version + 1 }, '…and moves it')
  const told = await bus.waitFor((e) => e.type === 'layout:computed' && e.payload.roomId === roomId && mentions(hidden)(e), mark)
  t.same(told.audience, { kind: 'room', roomId, sparkId: hidden }, 'its new place goes to those who may see it (its creator) alone')
  const toRoom = await bus.waitFor((e) => e.type === 'layout:computed' && e.payload.roomId === roomId && e.audience.kind === 'room' && e.audience.sparkId === undefined, mark)
  t.notOk(mentions(hidden)(toRoom), 'the room\'s event leaves it out')
  const rpc = await author.rpc(CanvasService).computeLayout({ roomId, algorithm: 'force-directed' })
  t.ok(rpc.positions.some((q) => q.tileId === hidden), 'its creator\'s layout (RPC) includes it')
})

t.test('moves and batches naming a hidden spark: 404 / NOT_FOUND for others, like a tile that does not exist; its creator moves it', async (t) => {
  const room = await roomWithHiddenSpark()
  const { hidden, ownerTile } = room
  const before = await stateOf(hidden)
  const ownerTileBefore = await stateOf(ownerTile)
  const missing = 'spark_doesnotexist0000000'
  for (const [who, p] of others) {
    const single = await p.rest('PATCH', '/api/canvas/position', { tileId: hidden, x: 400, y: 400 })
    t.equal(single.statusCode, 404, `${who}: UpdatePosition (REST)`)
    t.same(single.json(), (await p.rest('PATCH', '/api/canvas/position', { tileId: missing, x: 400, y: 400 })).json(), 'the same answer as a missing tile')
    t.equal((await rpcError(p.rpc(CanvasService).updatePosition({ tileId: hidden, x: 400, y: 400 }))).code, Code.NotFound, `${who}: UpdatePosition (RPC)`)
    const viaSpark = await p.rest('PATCH', `/api/sparks/${hidden}/position`, { x: 400, y: 400 })
    t.equal(viaSpark.statusCode, 404, `${who}: MoveSpark (REST)`)
    t.same(viaSpark.json(), (await p.rest('PATCH', `/api/sparks/${missing}/position`, { x: 400, y: 400 })).json(), 'the same answer as a missing spark')
    t.equal((await rpcError(p.rpc(SparksService, { binary: true }).moveSpark({ sparkId: hidden, x: 400, y: 400 }))).code, Code.NotFound, `${who}: MoveSpark (RPC)`)
    const batch = await p.rest('PATCH', '/api/canvas/positions/batch', { updates: [{ tileId: ownerTile, x: 600, y: 600 }, { tileId: hidden, x: 400, y: 400 }] })
    t.equal(batch.statusCode, 404, `${who}: BatchUpdatePositions (REST)`)
    t.same(batch.json(), (await p.rest('PATCH', '/api/canvas/positions/batch', { updates: [{ tileId: ownerTile, x: 600, y: 600 }, { tileId: missing, x: 400, y: 400 }] })).json(), 'the same answer as a missing tile')
    const rpcBatch = await rpcError(p.rpc(CanvasService).batchUpdatePositions({ updates: [{ tileId: hidden, x: 400, y: 400 }, { tileId: ownerTile, x: 600, y: 600 }] }))
    t.equal(rpcBatch.code, Code.NotFound, `${who}: BatchUpdatePositions (RPC)`)
  }
  t.same(await stateOf(hidden), before, 'the hidden spark never moved')
  t.same(await stateOf(ownerTile), ownerTileBefore, 'nor did the batches\' other tile (all or none)')

  t.equal((await author.rest('PATCH', '/api/canvas/position', { tileId: hidden, x: 400, y: 400 })).statusCode, 200, 'its creator: UpdatePosition (REST)')
  t.equal((await author.rpc(CanvasService).updatePosition({ tileId: hidden, x: 420, y: 400 })).position?.x, 420, 'UpdatePosition (RPC)')
  t.equal((await author.rest('PATCH', `/api/sparks/${hidden}/position`, { x: 440, y: 400 })).json().data.position.x, 440, 'MoveSpark (REST)')
  t.equal((await author.rpc(SparksService).moveSpark({ sparkId: hidden, x: 460, y: 400 })).spark?.x, 460, 'MoveSpark (RPC)')
  t.equal((await author.rest('PATCH', '/api/canvas/positions/batch', { updates: [{ tileId: hidden, x: 480, y: 400 }, { tileId: ownerTile, x: 2000, y: 0 }] })).statusCode, 200, 'BatchUpdatePositions (REST)')
  t.equal((await author.rpc(CanvasService).batchUpdatePositions({ updates: [{ tileId: hidden, x: 500, y: 400 }] })).positions[0]?.x, 500, 'BatchUpdatePositions (RPC)')
  t.same(await stateOf(hidden), { x: 500, y: 400, version: before.version + 6 }, 'each of its creator\'s moves applied')
})

t.test('collisions: a hidden spark is no obstacle for others; its creator\'s moves collide with it, and the room\'s event does not say so', async (t) => {
  const { roomId, hidden, authorTile, ownerTile } = await roomWithHiddenSpark()
  for (const [who, p] of others) {
    const spot = { x: 0, y: 0 }
    t.equal((await p.rest('PATCH', '/api/canvas/position', { tileId: ownerTile, ...spot })).json().data.collisionDetected, false, `${who}: UpdatePosition (REST) onto it`)
    t.equal((await p.rpc(CanvasService).updatePosition({ tileId: ownerTile, x: 20, y: 20 })).position?.collisionDetected, false, `${who}: UpdatePosition (RPC)`)
    t.equal((await p.rest('PATCH', `/api/sparks/${ownerTile}/position`, { x: 40, y: 0 })).json().data.position.collisionDetected, false, `${who}: MoveSpark (REST)`)
    t.equal((await p.rpc(SparksService, { binary: true }).moveSpark({ sparkId: ownerTile, x: 0, y: 40 })).position?.collisionDetected, false, `${who}: MoveSpark (RPC)`)
    t.same((await p.rest('PATCH', '/api/canvas/positions/batch', { updates: [{ tileId: ownerTile, x: 60, y: 0 }] })).json().data.positions.map((q: { collisionDetected: boolean }) => q.collisionDetected), [false], `${who}: BatchUpdatePositions (REST)`)
    t.same((await p.rpc(CanvasService).batchUpdatePositions({ updates: [{ tileId: ownerTile, x: 0, y: 60 }] })).positions.map((q) => q.collisionDetected), [false], `${who}: BatchUpdatePositions (RPC)`)
    await p.rest('PATCH', '/api/canvas/position', { tileId: ownerTile, x: 2000, y: 0 })
  }

  const mark = bus.mark()
  const rest = (await author.rest('PATCH', '/api/canvas/position', { tileId: authorTile, x: 20, y: 0 })).json().data
  t.equal(rest.collisionDetected, true, 'its creator: UpdatePosition (REST) onto it collides')
  const event = await bus.waitFor((e) => e.type === 'position:updated' && e.payload.tileId === authorTile, mark)
  t.same(event.audience, { kind: 'room', roomId, sparkId: authorTile }, 'the move of a visible tile goes to the whole room…')
  t.equal((event.payload as { collisionDetected: boolean }).collisionDetected, false, '…so its event counts only tiles everyone sees')
  t.equal((await author.rpc(CanvasService).updatePosition({ tileId: authorTile, x: 40, y: 0 })).position?.collisionDetected, true, 'UpdatePosition (RPC)')
  t.equal((await author.rpc(SparksService).moveSpark({ sparkId: authorTile, x: 60, y: 0 })).position?.collisionDetected, true, 'MoveSpark (RPC)')
  t.equal((await author.rest('PATCH', `/api/sparks/${authorTile}/position`, { x: 80, y: 0 })).json().data.position.collisionDetected, true, 'MoveSpark (REST)')
  t.same((await author.rest('PATCH', '/api/canvas/positions/batch', { updates: [{ tileId: authorTile, x: 100, y: 0 }] })).json().data.positions.map((q: { collisionDetected: boolean }) => q.collisionDetected), [true], 'BatchUpdatePositions (REST)')
  t.same((await author.rpc(CanvasService, { binary: true }).batchUpdatePositions({ updates: [{ tileId: authorTile, x: 120, y: 0 }] })).positions.map((q) => q.collisionDetected), [true], 'BatchUpdatePositions (RPC)')
  const hiddenMove = (await author.rest('PATCH', '/api/canvas/position', { tileId: hidden, x: 2000, y: 0 })).json().data
  t.equal(hiddenMove.collisionDetected, true, 'moving the hidden spark itself onto a visible tile collides for its creator')
})

t.test('validation: a hidden spark is in no one\'s issues but its creator\'s answer; the room\'s event leaves it out', async (t) => {
  const { roomId, hidden, ownerTile } = await roomWithHiddenSpark()
  // The owner's tile onto the hidden spark's spot: an overlap only its creator may see.
  t.equal((await owner.rest('PATCH', '/api/canvas/position', { tileId: ownerTile, x: 0, y: 0 })).statusCode, 200)
  const clean = { roomId, valid: true, issues: [], issueCount: 0, truncated: false }
  for (const [who, p] of others) {
    const mark = bus.mark()
    t.same((await p.rest('POST', '/api/canvas/layout/validate', { roomId })).json().data, clean, `${who}: ValidateLayout (REST) does not see it`)
    t.same(plain(await p.rpc(CanvasService, { binary: true }).validateLayout({ roomId })), clean, `${who}: ValidateLayout (RPC)`)
    t.same((await bus.waitFor((e) => e.type === 'layout:validated' && e.payload.roomId === roomId, mark)).payload, clean, 'nor does the event')
  }
  const mark = bus.mark()
  const seen = { roomId, valid: false, issues: [{ kind: 'overlap', tileIds: [hidden, ownerTile].sort() }], issueCount: 1, truncated: false }
  t.same((await author.rest('POST', '/api/canvas/layout/validate', { roomId })).json().data, seen, 'its creator\'s answer (REST) counts it')
  t.same(plain(await author.rpc(CanvasService).validateLayout({ roomId })), seen, 'its creator\'s answer (RPC) too')
  const event = await bus.waitFor((e) => e.type === 'layout:validated' && e.payload.roomId === roomId, mark)
  t.same(event.payload, clean, 'the event, which goes to the whole room, covers the tiles everyone sees')
  t.same(event.audience, { kind: 'room', roomId })
})

t.test('canvas state: others do not get it; its creator does', async (t) => {
  const { roomId, hidden, authorTile, ownerTile } = await roomWithHiddenSpark()
  for (const [who, p] of others) {
    t.same((await p.rest('GET', `/api/canvas/state?roomId=${roomId}`)).json().data.tiles.map((q: { tileId: string }) => q.tileId), [authorTile, ownerTile].sort(), `${who}: GetCanvasState (REST)`)
    t.same((await p.rpc(CanvasService).getCanvasState({ roomId })).tiles.map((q) => q.tileId), [authorTile, ownerTile].sort(), `${who}: GetCanvasState (RPC)`)
  }
  t.same((await author.rest('GET', `/api/canvas/state?roomId=${roomId}`)).json().data.tiles.map((q: { tileId: string }) => q.tileId), [hidden, authorTile, ownerTile].sort(), 'its creator (REST)')
  t.same((await author.rpc(CanvasService, { binary: true }).getCanvasState({ roomId })).tiles.map((q) => q.tileId), [hidden, authorTile, ownerTile].sort(), 'its creator (RPC)')
})
