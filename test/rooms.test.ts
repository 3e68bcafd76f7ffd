// Rooms on both transports: create/read across transports, validation, update (rename, visibility),
// delete with its sparks, the caller's rooms vs every public room, pagination edges, and events.
import t from 'tap'
import { Code } from '@connectrpc/connect'
import { RoomsService } from '../src/gen/app/rooms/v1/rooms_pb.js'
import { SparksService } from '../src/gen/app/sparks/v1/sparks_pb.js'
import { BadRequestSchema } from '../src/gen/google/rpc/error_details_pb.js'
import { startApp } from './helpers/app.js'
import { recordEvents } from './helpers/events.js'
import { anonymousRest, plain, rpcError, signInPerson } from './helpers/people.js'
import { rpcClient } from './helpers/sign-in.js'

const s = await startApp()
t.teardown(s.close)
const bus = recordEvents(s)
t.teardown(bus.stop)
const anonymous = anonymousRest(s)
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

t.test('REST create → RPC read, RPC create (binary) → REST read: identical rooms, room:created after commit', async (t) => {
  const owner = await signInPerson(s, 'owner')
  const created = await owner.rest('POST', '/api/rooms', { name: 'Planning', description: 'Q3 ideas', isPublic: true })
  t.equal(created.statusCode, 201)
  const room = created.json().data
  t.match(room, { name: 'Planning', description: 'Q3 ideas', isPublic: true, createdBy: owner.userId })
  t.match(room.id, /^room_/)
  t.match(room.createdAt, ISO_MS)
  t.equal(room.updatedAt, room.createdAt)
  t.same(plain((await owner.rpc(RoomsService).getRoom({ roomId: room.id })).room), room, 'RPC JSON reads the same room')
  t.same(plain((await owner.rpc(RoomsService, { binary: true }).getRoom({ roomId: room.id })).room), room, 'RPC binary too')

  const event = await bus.waitFor((e) => e.type === 'room:created' && e.payload.id === room.id)
  t.same(event.payload, room, 'payload is the full room')
  t.same(event.audience, { kind: 'room', roomId: room.id })
  t.equal(event.userId, owner.userId)

  const viaRpc = (await owner.rpc(RoomsService, { binary: true }).createRoom({ name: 'Private notes', isPublic: false })).room
  t.ok(viaRpc)
  const read = await owner.rest('GET', `/api/rooms/${viaRpc?.id ?? ''}`)
  t.equal(read.statusCode, 200)
  t.same(read.json().data, plain(viaRpc), 'REST reads what RPC created')
  t.notOk('description' in read.json().data, 'no description: the field is absent')
  t.equal(read.json().data.isPublic, false)
  await bus.waitFor((e) => e.type === 'room:created' && e.payload.id === viaRpc?.id)
})

t.test('text beyond ASCII reads the same through REST, RPC JSON and RPC binary, written through either', async (t) => {
  const owner = await signInPerson(s, 'unicode')
  const name = 'Café ✓ 日本語 😀 עברית'
  const description = `Ünïcödé ${'€'.repeat(300)} \u200f 🧪`
  const viaRest = (await owner.rest('POST', '/api/rooms', { name, description, isPublic: false })).json().data
  const viaBinary = (await owner.rpc(RoomsService, { binary: true }).createRoom({ name, description, isPublic: false })).room
  for (const room of [viaRest, plain(viaBinary)]) {
    t.match(room, { name, description })
    t.same((await owner.rest('GET', `/api/rooms/${room.id}`)).json().data, room, 'REST')
    t.same(plain((await owner.rpc(RoomsService).getRoom({ roomId: room.id })).room), room, 'RPC JSON')
    t.same(plain((await owner.rpc(RoomsService, { binary: true }).getRoom({ roomId: room.id })).room), room, 'RPC binary')
  }
})

t.test('room validation: the same messages on both transports, nothing published', async (t) => {
  const owner = await signInPerson(s, 'validator')
  const mark = bus.mark()
  const cases: Array<[string, unknown, string]> = [
    ['empty name', { name: '', isPublic: true }, 'name'],
    ['101-character name', { name: 'x'.repeat(101), isPublic: true }, 'name'],
    ['blank name', { name: '   ', isPublic: true }, 'name'],
    ['missing name', { isPublic: true }, 'name'],
    ['1001-character description', { name: 'ok', description: 'd'.repeat(1001), isPublic: true }, 'description'],
    ['isPublic not a boolean', { name: 'ok', isPublic: 'yes' }, 'isPublic'],
    ['unknown field', { name: 'ok', owner: 'me' }, 'owner']
  ]
  for (const [label, body, field] of cases) {
    const res = await owner.rest('POST', '/api/rooms', body)
    t.equal(res.statusCode, 400, `REST ${label}`)
    t.equal(res.json().error, 'ValidationError')
    t.equal(res.json().details[0].field, field)
  }
  const empty = await owner.rest('POST', '/api/rooms', { name: '' })
  t.equal(empty.json().message, 'Invalid input: Room name must be between 1 and 100 characters')
  t.same(empty.json().details, [{ field: 'name', issue: 'Room name must be between 1 and 100 characters' }])

  for (const binary of [false, true]) {
    const rooms = owner.rpc(RoomsService, { binary })
    for (const name of ['', 'x'.repeat(101)]) {
      const error = await rpcError(rooms.createRoom({ name, isPublic: true }))
      t.equal(error.code, Code.InvalidArgument)
      t.same(error.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => ({ field: v.field, description: v.description })),
        [{ field: 'name', description: 'Room name must be between 1 and 100 characters' }])
    }
    const long = await rpcError(rooms.createRoom({ name: 'ok', description: 'd'.repeat(1001) }))
    t.equal(long.code, Code.InvalidArgument)
  }
  const hundred = await owner.rest('POST', '/api/rooms', { name: 'n'.repeat(100), description: 'd'.repeat(1000), isPublic: false })
  t.equal(hundred.statusCode, 201, '100 characters and a 1000-character description are fine')
  const marker = hundred.json().data.id
  await bus.waitFor((e) => e.type === 'room:created' && e.payload.id === marker, mark)
  t.same(bus.matching((e) => e.userId === owner.userId && e.type === 'room:created', mark).map((e) => e.type === 'room:created' && e.payload.id), [marker], 'only the valid create published')
})

t.test('update: rename, describe, clear description, switch visibility; creator only; room:updated', async (t) => {
  const owner = await signInPerson(s, 'renamer')
  const room = (await owner.rest('POST', '/api/rooms', { name: 'Before', description: 'old', isPublic: true })).json().data
  const renamed = await owner.rest('PATCH', `/api/rooms/${room.id}`, { name: 'After' })
  t.equal(renamed.statusCode, 200)
  t.match(renamed.json().data, { id: room.id, name: 'After', description: 'old', isPublic: true })
  t.ok(renamed.json().data.updatedAt >= room.updatedAt)
  const event = await bus.waitFor((e) => e.type === 'room:updated' && e.payload.id === room.id)
  t.same(event.payload, renamed.json().data)
  t.same(event.audience, { kind: 'room', roomId: room.id })
  t.equal(event.userId, owner.userId)

  const viaRpc = await owner.rpc(RoomsService, { binary: true }).updateRoom({ roomId: room.id, description: '' })
  t.equal(viaRpc.room?.name, 'After', 'unset fields stay')
  t.equal(viaRpc.room?.description, undefined, 'an empty description clears it')
  const cleared = (await owner.rest('GET', `/api/rooms/${room.id}`)).json().data
  t.notOk('description' in cleared)

  const priv = await owner.rpc(RoomsService).updateRoom({ roomId: room.id, isPublic: false })
  t.equal(priv.room?.isPublic, false)
  // Delivery can be asynchronous: let everything published so far arrive before marking.
  await bus.waitFor((e) => e.type === 'room:updated' && e.payload.id === room.id && !e.payload.isPublic)

  const mark = bus.mark()
  const empty = await owner.rest('PATCH', `/api/rooms/${room.id}`, {})
  t.equal(empty.statusCode, 400, 'an update must change something')
  t.equal((await rpcError(owner.rpc(RoomsService).updateRoom({ roomId: room.id }))).code, Code.InvalidArgument)
  t.equal((await owner.rest('PATCH', `/api/rooms/${room.id}`, { name: '' })).statusCode, 400)
  t.equal((await owner.rest('PATCH', `/api/rooms/${room.id}`, { id: 'x' })).statusCode, 400)
  const last = await owner.rest('PATCH', `/api/rooms/${room.id}`, { name: 'Marker' })
  await bus.waitFor((e) => e.type === 'room:updated' && e.payload.id === room.id && e.payload.name === 'Marker', mark)
  t.equal(bus.matching((e) => e.type === 'room:updated' && e.payload.id === room.id, mark).length, 1, 'failed updates published nothing')
  t.equal(last.statusCode, 200)
})

t.test('delete: 204 / {}, sparks go with the room, room:deleted to the members at deletion time', async (t) => {
  const owner = await signInPerson(s, 'deleter')
  const visitor = await signInPerson(s, 'visitor')
  const room = (await owner.rest('POST', '/api/rooms', { name: 'Short-lived', isPublic: true })).json().data
  const spark = (await owner.rest('POST', '/api/sparks', { title: 'one', content: '', roomId: room.id, x: 0, y: 0 })).json().data
  const visitorSpark = (await visitor.rest('POST', '/api/sparks', { title: 'two', content: '', roomId: room.id, x: 400, y: 0 })).json().data
  t.ok(visitorSpark.id, 'the visitor wrote in the room, and so joined it')

  const deleted = await owner.rest('DELETE', `/api/rooms/${room.id}`)
  t.equal(deleted.statusCode, 204)
  t.equal(deleted.body, '')
  const event = await bus.waitFor((e) => e.type === 'room:deleted' && e.payload.id === room.id)
  t.same(event.payload, { id: room.id })
  t.equal(event.audience.kind, 'users')
  t.same(event.audience.kind === 'users' ? [...event.audience.userIds].sort() : [], [owner.userId, visitor.userId].sort())
  t.equal(event.userId, owner.userId)

  t.equal((await owner.rest('GET', `/api/rooms/${room.id}`)).statusCode, 404)
  t.equal((await owner.rest('GET', `/api/sparks/${spark.id}`)).statusCode, 404, 'its sparks are gone')
  t.equal((await rpcError(visitor.rpc(SparksService).getSpark({ sparkId: visitorSpark.id }))).code, Code.NotFound, 'including the ones of others')
  t.equal((await owner.rest('DELETE', `/api/rooms/${room.id}`)).statusCode, 404, 'deleting twice: not found')
  t.same([...await s.app.core.audience.recipientsOf({ kind: 'room', roomId: room.id })], [], 'a deleted room has no audience')

  const other = (await owner.rpc(RoomsService, { binary: true }).createRoom({ name: 'via rpc', isPublic: false })).room?.id ?? ''
  t.same(plain(await owner.rpc(RoomsService, { binary: true }).deleteRoom({ roomId: other })), {})
  t.equal((await rpcError(owner.rpc(RoomsService).getRoom({ roomId: other }))).code, Code.NotFound)
})

t.test('listing: the caller\'s rooms; scope=public lists every public room; anonymous RPC sees public rooms only, anonymous REST is 401', async (t) => {
  const alice = await signInPerson(s, 'alice')
  const bob = await signInPerson(s, 'bob')
  const alicePublic = (await alice.rest('POST', '/api/rooms', { name: 'Alice public', isPublic: true })).json().data
  const alicePrivate = (await alice.rest('POST', '/api/rooms', { name: 'Alice private', isPublic: false })).json().data
  const bobPublic = (await bob.rest('POST', '/api/rooms', { name: 'Bob public', isPublic: true })).json().data

  const mine = await alice.rest('GET', '/api/rooms')
  t.equal(mine.statusCode, 200)
  t.same(mine.json().data.map((r: { id: string }) => r.id), [alicePrivate.id, alicePublic.id], 'own rooms, newest first')
  t.same(mine.json().pagination, { page: 1, limit: 20, total: 2, totalPages: 1 })
  const mineRpc = await alice.rpc(RoomsService, { binary: true }).listRooms({})
  t.same(plain(mineRpc.rooms), mine.json().data, 'RPC lists the same rooms')
  t.same(plain(mineRpc.pagination), mine.json().pagination)

  const ids = async (scope: 'public'): Promise<string[]> => {
    const all: string[] = []
    for (let page = 1; ; page++) {
      const res = await alice.rest('GET', `/api/rooms?scope=${scope}&limit=100&page=${page}`)
      t.equal(res.statusCode, 200)
      all.push(...res.json().data.map((r: { id: string }) => r.id))
      if (page >= res.json().pagination.totalPages) return all
    }
  }
  const publicIds = await ids('public')
  t.ok(publicIds.includes(alicePublic.id) && publicIds.includes(bobPublic.id), 'scope=public: every public room')
  t.notOk(publicIds.includes(alicePrivate.id), 'never a private room')

  const anon = rpcClient(s, RoomsService)
  const anonIds = (await anon.listRooms({ limit: 100 })).rooms.map((r) => r.id)
  t.notOk(anonIds.includes(alicePrivate.id), 'anonymous: no private rooms')
  const scoped = (await bob.rpc(RoomsService).listRooms({ scope: 'public', limit: 100 })).rooms.map((r) => r.id)
  t.notOk(scoped.includes(alicePrivate.id))
  // Optional is the RPC gateway's class (DECISIONS §16): on REST the list needs the session.
  for (const url of ['/api/rooms?limit=100', '/api/rooms?scope=public']) {
    const anonRest = await anonymous('GET', url)
    t.equal(anonRest.statusCode, 401, `REST ${url} without a session`)
    t.equal(anonRest.headers['ratelimit-limit'], '300', 'with the rate-limit headers')
  }
  t.equal((await alice.rest('GET', '/api/rooms?scope=everything')).statusCode, 400, 'unknown scope')
  t.equal((await rpcError(alice.rpc(RoomsService).listRooms({ scope: 'all' }))).code, Code.InvalidArgument)

  t.notOk((await bob.rest('GET', '/api/rooms')).json().data.some((r: { id: string }) => r.id === alicePublic.id), 'Bob is not a member of Alice\'s room yet')
  t.equal((await bob.rest('GET', `/api/canvas/state?roomId=${alicePublic.id}`)).statusCode, 200, 'Bob opens its canvas')
  const bobs = (await bob.rest('GET', '/api/rooms')).json().data.map((r: { id: string }) => r.id)
  t.same(bobs.sort(), [alicePublic.id, bobPublic.id].sort(), 'now it is one of Bob\'s rooms')
  t.ok((await s.app.core.audience.canSee(bob.userId, { kind: 'room', roomId: alicePublic.id })), 'and Bob is in its audience')

  await alice.rest('PATCH', `/api/rooms/${alicePublic.id}`, { isPublic: false })
  t.notOk((await bob.rest('GET', '/api/rooms')).json().data.some((r: { id: string }) => r.id === alicePublic.id), 'turning private ends Bob\'s membership')
  t.same([...await s.app.core.audience.recipientsOf({ kind: 'room', roomId: alicePublic.id })], [alice.userId], 'only the creator hears a private room')
  await alice.rest('PATCH', `/api/rooms/${alicePublic.id}`, { isPublic: true })
  t.notOk((await bob.rest('GET', '/api/rooms')).json().data.some((r: { id: string }) => r.id === alicePublic.id), 'public again: Bob has to open it again to rejoin')
})

t.test('pagination edges on both transports', async (t) => {
  const owner = await signInPerson(s, 'pager')
  const created: string[] = []
  for (let i = 0; i < 3; i++) created.push((await owner.rest('POST', '/api/rooms', { name: `Room ${i}` })).json().data.id)
  const newestFirst = [...created].reverse()

  const page1 = (await owner.rest('GET', '/api/rooms?limit=2')).json()
  t.same(page1.data.map((r: { id: string }) => r.id), newestFirst.slice(0, 2))
  t.same(page1.pagination, { page: 1, limit: 2, total: 3, totalPages: 2 })
  const page2 = (await owner.rest('GET', '/api/rooms?limit=2&page=2')).json()
  t.same(page2.data.map((r: { id: string }) => r.id), newestFirst.slice(2))
  const beyond = await owner.rest('GET', '/api/rooms?limit=2&page=7')
  t.equal(beyond.statusCode, 200, 'a page beyond the end is empty, not an error')
  t.same(beyond.json(), { data: [], pagination: { page: 7, limit: 2, total: 3, totalPages: 2 } })
  t.same((await owner.rest('GET', '/api/rooms?limit=100')).json().pagination, { page: 1, limit: 100, total: 3, totalPages: 1 })

  for (const query of ['limit=101', 'limit=0', 'page=0', 'page=-1', 'page=abc', 'limit=abc', 'page=', 'limit=2.5', 'page=1.5', 'limit=0x10', 'limit=1e1', 'page=1&page=2']) {
    const res = await owner.rest('GET', `/api/rooms?${query}`)
    t.equal(res.statusCode, 400, query)
    t.equal(res.json().details[0].field, query.split('=')[0])
  }

  for (const binary of [false, true]) {
    const rooms = owner.rpc(RoomsService, { binary })
    const rpcBeyond = await rooms.listRooms({ page: 9, limit: 2 })
    t.same(rpcBeyond.rooms, [])
    t.same(plain(rpcBeyond.pagination), { page: 9, limit: 2, total: 3, totalPages: 2 })
    t.same(plain((await rooms.listRooms({ limit: 100 })).pagination), { page: 1, limit: 100, total: 3, totalPages: 1 })
    for (const request of [{ limit: 101 }, { page: 0 }, { limit: 0 }]) {
      const error = await rpcError(rooms.listRooms(request))
      t.equal(error.code, Code.InvalidArgument, JSON.stringify(request))
    }
  }

  const fresh = await signInPerson(s, 'empty')
  t.same((await fresh.rest('GET', '/api/rooms')).json(), { data: [], pagination: { page: 1, limit: 20, total: 0, totalPages: 0 } }, 'an empty list')
  t.same(plain((await fresh.rpc(RoomsService).listRooms({})).pagination), { page: 1, limit: 20, total: 0, totalPages: 0 })
})
