// The bound on tiles per room (MAX_TILES_PER_ROOM, 1,000): creates up to it succeed, the next one is
// 409 LimitReached / FAILED_PRECONDITION and stores nothing; creators racing for the last place
// get exactly one success; deleting a spark frees a place.
import t from 'tap'
import { Code, ConnectError } from '@connectrpc/connect'
import { SparksService } from '../src/gen/app/sparks/v1/sparks_pb.js'
import { MAX_TILES_PER_ROOM } from '../src/core/canvas/tile-limit.js'
import { startApp } from './helpers/app.js'
import { rpcError, signInPerson, type Person } from './helpers/people.js'
import { seedTiles } from './helpers/tiles.js'

const s = await startApp()
t.teardown(s.close)
const owner = await signInPerson(s, 'filler')
const guest = await signInPerson(s, 'guest')

async function roomWith (count: number): Promise<string> {
  const room = await owner.rest('POST', '/api/rooms', { name: 'Full house', isPublic: true })
  const roomId = room.json().data.id as string
  await seedTiles(s, roomId, owner.userId, count)
  return roomId
}

async function sparkCount (p: Person, roomId: string): Promise<number> {
  return (await p.rest('GET', `/api/sparks?roomId=${roomId}&limit=1`)).json().pagination.total
}

t.test('the limit is 1,000; the 1,000th create succeeds, the next is LimitReached on REST and FAILED_PRECONDITION on RPC', async (t) => {
  t.equal(MAX_TILES_PER_ROOM, 1000)
  const roomId = await roomWith(MAX_TILES_PER_ROOM - 1)
  const last = await guest.rest('POST', '/api/sparks', { roomId, title: 'last', x: 0, y: 0 })
  t.equal(last.statusCode, 201, 'the 1,000th spark')

  const over = await owner.rest('POST', '/api/sparks', { roomId, title: 'one too many', x: 0, y: 0 })
  t.equal(over.statusCode, 409)
  t.same(over.json(), { error: 'LimitReached', message: 'A room holds at most 1000 sparks (tiles); delete one before adding another.' })
  const viaRpc = await rpcError(guest.rpc(SparksService, { binary: true }).createSpark({ roomId, title: 'one too many', x: 0, y: 0 }))
  t.equal(viaRpc.code, Code.FailedPrecondition)
  t.match(viaRpc.rawMessage, /at most 1000 sparks/)
  t.equal(await sparkCount(owner, roomId), MAX_TILES_PER_ROOM, 'nothing was stored')

  t.equal((await guest.rest('DELETE', `/api/sparks/${last.json().data.id as string}`)).statusCode, 204)
  t.equal((await owner.rpc(SparksService).createSpark({ roomId, title: 'room again', x: 0, y: 0 })).spark?.title, 'room again', 'a delete frees a place')
})

t.test('creators racing for the last place: exactly one succeeds, on both transports', async (t) => {
  const roomId = await roomWith(MAX_TILES_PER_ROOM - 1)
  const results = await Promise.all([
    ...[owner, guest, owner].map(async (p, i) => (await p.rest('POST', '/api/sparks', { roomId, title: `racer ${i}`, x: 0, y: 0 })).statusCode),
    ...[guest, owner, guest].map(async (p, i) => {
      try {
        await p.rpc(SparksService).createSpark({ roomId, title: `rpc racer ${i}`, x: 0, y: 0 })
        return 201
      } catch (error) {
        return ConnectError.from(error).code === Code.FailedPrecondition ? 409 : -1
      }
    })
  ])
  t.same(results.filter((code) => code === 201).length, 1, `one winner (${results.join(', ')})`)
  t.same(results.filter((code) => code === 409).length, results.length - 1, 'every other creator is refused with the limit')
  t.equal(await sparkCount(owner, roomId), MAX_TILES_PER_ROOM)
})

t.test('a room under the limit is unaffected: counts are per room', async (t) => {
  await roomWith(MAX_TILES_PER_ROOM)
  const other = await roomWith(0)
  t.equal((await owner.rest('POST', '/api/sparks', { roomId: other, title: 'elsewhere', x: 0, y: 0 })).statusCode, 201)
})
