// Who may do what (DECISIONS §5), on both transports: (room owner, another signed-in user,
// anonymous) × (public room, private room) × every room, spark and canvas operation; membership
// (who joins, when it ends); and account deletion removing the user's rooms and sparks.
import t from 'tap'
import { Code, ConnectError } from '@connectrpc/connect'
import { sql } from 'kysely'
import { CanvasService } from '../src/gen/app/canvas/v1/canvas_pb.js'
import { RoomsService } from '../src/gen/app/rooms/v1/rooms_pb.js'
import { SparksService } from '../src/gen/app/sparks/v1/sparks_pb.js'
import { lastMailTo, startApp } from './helpers/app.js'
import { recordEvents } from './helpers/events.js'
import { anonymousRest, signInPerson, type Person, type RestCall } from './helpers/people.js'
import { rpcClient } from './helpers/sign-in.js'

const s = await startApp()
t.teardown(s.close)
const bus = recordEvents(s)
t.teardown(bus.stop)

type Role = 'owner' | 'other' | 'anonymous'
type Visibility = 'public' | 'private'
interface Fixture { roomId: string, sparkId: string, isPublic: boolean }
interface Clients { rooms: ReturnType<typeof rpcClient<typeof RoomsService>>, sparks: ReturnType<typeof rpcClient<typeof SparksService>>, canvas: ReturnType<typeof rpcClient<typeof CanvasService>> }

const owner = await signInPerson(s, 'owner')
const other = await signInPerson(s, 'other')
const anonymous = anonymousRest(s)

async function fixture (visibility: Visibility, withSpark = true): Promise<Fixture> {
  const room = await owner.rest('POST', '/api/rooms', { name: `${visibility} room`, isPublic: visibility === 'public' })
  if (room.statusCode !== 201) throw new Error(room.body)
  const roomId = room.json().data.id as string
  const isPublic = visibility === 'public'
  if (!withSpark) return { roomId, sparkId: '', isPublic }
  const spark = await owner.rest('POST', '/api/sparks', { title: 'owner\'s spark', roomId, x: 0, y: 0 })
  if (spark.statusCode !== 201) throw new Error(spark.body)
  return { roomId, sparkId: spark.json().data.id, isPublic }
}

const shared: Record<Visibility, Fixture> = { public: await fixture('public'), private: await fixture('private') }

interface Operation {
  name: string
  /** Destructive operations get a fresh fixture per call. */
  fresh?: 'room' | 'spark'
  rest: (call: RestCall, f: Fixture) => ReturnType<RestCall>
  rpc: (c: Clients, f: Fixture) => Promise<unknown>
  /** Expected REST status per role and visibility. */
  expect: Record<Role, Record<Visibility, number>>
}

const reader = { owner: { public: 200, private: 200 }, other: { public: 200, private: 404 }, anonymous: { public: 401, private: 401 } }
const creatorOnly = (ok: number) => ({ owner: { public: ok, private: ok }, other: { public: 403, private: 404 }, anonymous: { public: 401, private: 401 } })

const operations: Operation[] = [
  { name: 'GetRoom', rest: async (call, f) => await call('GET', `/api/rooms/${f.roomId}`), rpc: async (c, f) => await c.rooms.getRoom({ roomId: f.roomId }), expect: reader },
  { name: 'UpdateRoom', rest: async (call, f) => await call('PATCH', `/api/rooms/${f.roomId}`, { name: 'renamed' }), rpc: async (c, f) => await c.rooms.updateRoom({ roomId: f.roomId, name: 'renamed' }), expect: creatorOnly(200) },
  { name: 'UpdateRoom (switch isPublic)', fresh: 'room', rest: async (call, f) => await call('PATCH', `/api/rooms/${f.roomId}`, { isPublic: !f.isPublic }), rpc: async (c, f) => await c.rooms.updateRoom({ roomId: f.roomId, isPublic: !f.isPublic }), expect: creatorOnly(200) },
  { name: 'DeleteRoom', fresh: 'room', rest: async (call, f) => await call('DELETE', `/api/rooms/${f.roomId}`), rpc: async (c, f) => await c.rooms.deleteRoom({ roomId: f.roomId }), expect: creatorOnly(204) },
  { name: 'ListSparks', rest: async (call, f) => await call('GET', `/api/sparks?roomId=${f.roomId}`), rpc: async (c, f) => await c.sparks.listSparks({ roomId: f.roomId }), expect: reader },
  { name: 'GetSpark', rest: async (call, f) => await call('GET', `/api/sparks/${f.sparkId}`), rpc: async (c, f) => await c.sparks.getSpark({ sparkId: f.sparkId }), expect: reader },
  {
    name: 'CreateSpark',
    rest: async (call, f) => await call('POST', '/api/sparks', { title: 'new', roomId: f.roomId, x: 500, y: 500 }),
    rpc: async (c, f) => await c.sparks.createSpark({ title: 'new', content: '', roomId: f.roomId, x: 500, y: 500 }),
    expect: { owner: { public: 201, private: 201 }, other: { public: 201, private: 404 }, anonymous: { public: 401, private: 401 } }
  },
  { name: 'UpdateSpark (owner\'s spark)', rest: async (call, f) => await call('PATCH', `/api/sparks/${f.sparkId}`, { title: 'edited' }), rpc: async (c, f) => await c.sparks.updateSpark({ sparkId: f.sparkId, title: 'edited' }), expect: creatorOnly(200) },
  { name: 'DeleteSpark (owner\'s spark)', fresh: 'spark', rest: async (call, f) => await call('DELETE', `/api/sparks/${f.sparkId}`), rpc: async (c, f) => await c.sparks.deleteSpark({ sparkId: f.sparkId }), expect: creatorOnly(204) },
  { name: 'MoveSpark', rest: async (call, f) => await call('PATCH', `/api/sparks/${f.sparkId}/position`, { x: 40, y: 40 }), rpc: async (c, f) => await c.sparks.moveSpark({ sparkId: f.sparkId, x: 40, y: 40 }), expect: reader },
  { name: 'UpdatePosition', rest: async (call, f) => await call('PATCH', '/api/canvas/position', { tileId: f.sparkId, x: 60, y: 60 }), rpc: async (c, f) => await c.canvas.updatePosition({ tileId: f.sparkId, x: 60, y: 60 }), expect: reader },
  { name: 'BatchUpdatePositions', rest: async (call, f) => await call('PATCH', '/api/canvas/positions/batch', { updates: [{ tileId: f.sparkId, x: 80, y: 80 }] }), rpc: async (c, f) => await c.canvas.batchUpdatePositions({ updates: [{ tileId: f.sparkId, x: 80, y: 80 }] }), expect: reader },
  { name: 'ComputeLayout', rest: async (call, f) => await call('POST', '/api/canvas/layout/compute', { roomId: f.roomId, algorithm: 'grid' }), rpc: async (c, f) => await c.canvas.computeLayout({ roomId: f.roomId, algorithm: 'force-directed' }), expect: reader },
  { name: 'ValidateLayout', rest: async (call, f) => await call('POST', '/api/canvas/layout/validate', { roomId: f.roomId }), rpc: async (c, f) => await c.canvas.validateLayout({ roomId: f.roomId }), expect: reader },
  { name: 'GetCanvasState', rest: async (call, f) => await call('GET', `/api/canvas/state?roomId=${f.roomId}`), rpc: async (c, f) => await c.canvas.getCanvasState({ roomId: f.roomId }), expect: reader },
  { name: 'GetPresence', rest: async (call, f) => await call('GET', `/api/canvas/presence?roomId=${f.roomId}`), rpc: async (c, f) => await c.canvas.getPresence({ roomId: f.roomId }), expect: reader },
  { name: 'ReportPresence', rest: async (call, f) => await call('POST', '/api/canvas/presence', { roomId: f.roomId }), rpc: async (c, f) => await c.canvas.reportPresence({ roomId: f.roomId }), expect: { owner: { public: 204, private: 204 }, other: { public: 204, private: 404 }, anonymous: { public: 401, private: 401 } } }
]

const CONNECT_CODE: Record<number, Code | 'ok'> = { 200: 'ok', 201: 'ok', 204: 'ok', 401: Code.Unauthenticated, 403: Code.PermissionDenied, 404: Code.NotFound }

function restCaller (role: Role): RestCall {
  return role === 'owner' ? owner.rest : role === 'other' ? other.rest : anonymous
}

function rpcClients (role: Role, binary: boolean): Clients {
  if (role === 'anonymous') return { rooms: rpcClient(s, RoomsService, { binary }), sparks: rpcClient(s, SparksService, { binary }), canvas: rpcClient(s, CanvasService, { binary }) }
  const who: Person = role === 'owner' ? owner : other
  return { rooms: who.rpc(RoomsService, { binary }), sparks: who.rpc(SparksService, { binary }), canvas: who.rpc(CanvasService, { binary }) }
}

async function fixtureFor (op: Operation, visibility: Visibility): Promise<Fixture> {
  if (op.fresh === 'room') return await fixture(visibility, false)
  if (op.fresh === 'spark') {
    const spark = await owner.rest('POST', '/api/sparks', { title: 'to delete', roomId: shared[visibility].roomId, x: 1000, y: 0 })
    return { ...shared[visibility], sparkId: spark.json().data.id }
  }
  return shared[visibility]
}

for (const op of operations) {
  t.test(`access: ${op.name}`, async (t) => {
    for (const role of ['owner', 'other', 'anonymous'] as const) {
      for (const visibility of ['public', 'private'] as const) {
        const expected = op.expect[role][visibility]
        const restResult = await op.rest(restCaller(role), await fixtureFor(op, visibility))
        t.equal(restResult.statusCode, expected, `REST ${role} × ${visibility}`)
        for (const binary of [false, true]) {
          let code: Code | 'ok' = 'ok'
          try {
            await op.rpc(rpcClients(role, binary), await fixtureFor(op, visibility))
          } catch (error) {
            code = ConnectError.from(error).code
          }
          t.equal(code, CONNECT_CODE[expected], `RPC ${binary ? 'binary' : 'JSON'} ${role} × ${visibility}`)
        }
      }
    }
  })
}

t.test('refused writes of the matrix published nothing', async (t) => {
  const marker = (await other.rest('POST', '/api/sparks', { title: 'marker', roomId: shared.public.roomId, x: 2000, y: 0 })).json().data.id
  await bus.waitFor((e) => e.type === 'spark:created' && e.payload.id === marker)
  const byOther = bus.matching((e) => e.userId === other.userId)
  t.same(byOther.filter((e) => ['room:updated', 'room:deleted', 'spark:updated', 'spark:deleted'].includes(e.type)), [], 'the other user was refused every such write')
  t.same(byOther.filter((e) => e.audience.kind === 'room' && e.audience.roomId === shared.private.roomId), [], 'nothing about the private room')
  t.same(bus.matching((e) => e.userId === undefined), [], 'anonymous callers changed nothing')
  t.ok(byOther.some((e) => e.type === 'position:updated') && byOther.some((e) => e.type === 'layout:computed'), 'while the allowed writes did publish')
})

t.test('access: CreateRoom and ListRooms', async (t) => {
  t.equal((await other.rest('POST', '/api/rooms', { name: 'mine' })).statusCode, 201, 'any signed-in user creates rooms')
  t.equal((await anonymous('POST', '/api/rooms', { name: 'mine' })).statusCode, 401)
  t.equal((await ConnectError.from(await rpcClient(s, RoomsService).createRoom({ name: 'x' }).catch((e: unknown) => e)).code), Code.Unauthenticated)
  // Optional is the RPC gateway's class (DECISIONS §16): REST lists need the session.
  t.equal((await anonymous('GET', '/api/rooms?limit=100')).statusCode, 401, 'anonymous REST: 401')
  const anonymousList = await rpcClient(s, RoomsService, { binary: true }).listRooms({ limit: 100 })
  t.ok(anonymousList.rooms.every((r) => r.isPublic), 'anonymous RPC: public rooms only')
  const otherRooms = (await other.rest('GET', '/api/rooms?limit=100')).json().data.map((r: { id: string }) => r.id)
  t.notOk(otherRooms.includes(shared.private.roomId), 'never someone else\'s private room')
})

t.test('a private room is indistinguishable from a missing one', async (t) => {
  const missing = await other.rest('GET', '/api/rooms/room_doesnotexist')
  const hidden = await other.rest('GET', `/api/rooms/${shared.private.roomId}`)
  t.same(hidden.json(), missing.json())
  const missingSpark = await other.rest('GET', '/api/sparks/spark_doesnotexist')
  const hiddenSpark = await other.rest('GET', `/api/sparks/${shared.private.sparkId}`)
  t.same(hiddenSpark.json(), missingSpark.json())
  const batch = await other.rest('PATCH', '/api/canvas/positions/batch', { updates: [{ tileId: shared.public.sparkId, x: 0, y: 0 }, { tileId: shared.private.sparkId, x: 0, y: 0 }] })
  t.equal(batch.statusCode, 404, 'a private tile inside a batch: not found, and nothing moves')
})

t.test('membership: reading the canvas or sparks, or writing, joins a public room; reading the room or a spark does not', async (t) => {
  const host = await signInPerson(s, 'host')
  const guest = await signInPerson(s, 'guest')
  const memberOf = async (p: Person): Promise<string[]> => (await p.rest('GET', '/api/rooms?limit=100')).json().data.map((r: { id: string }) => r.id)
  const make = async (): Promise<Fixture> => {
    const roomId = (await host.rest('POST', '/api/rooms', { name: 'open', isPublic: true })).json().data.id
    const sparkId = (await host.rest('POST', '/api/sparks', { title: 'x', roomId, x: 0, y: 0 })).json().data.id
    return { roomId, sparkId, isPublic: true }
  }
  const audience = async (roomId: string): Promise<string[]> => [...await s.app.core.audience.recipientsOf({ kind: 'room', roomId })].sort()

  const looked = await make()
  await guest.rest('GET', `/api/rooms/${looked.roomId}`)
  await guest.rest('GET', `/api/sparks/${looked.sparkId}`)
  t.equal((await guest.rest('PATCH', `/api/rooms/${looked.roomId}`, { name: 'mine' })).statusCode, 403)
  t.notOk((await memberOf(guest)).includes(looked.roomId), 'reading the room, a spark, or a refused write: not a member')
  t.same(await audience(looked.roomId), [host.userId])

  const joins: Array<[string, (f: Fixture) => Promise<unknown>]> = [
    ['canvas state (REST)', async (f) => await guest.rest('GET', `/api/canvas/state?roomId=${f.roomId}`)],
    ['canvas state (RPC)', async (f) => await guest.rpc(CanvasService).getCanvasState({ roomId: f.roomId })],
    ['spark list', async (f) => await guest.rpc(SparksService, { binary: true }).listSparks({ roomId: f.roomId })],
    ['creating a spark', async (f) => await guest.rest('POST', '/api/sparks', { title: 'g', roomId: f.roomId, x: 400, y: 0 })],
    ['moving a tile', async (f) => await guest.rpc(CanvasService).updatePosition({ tileId: f.sparkId, x: 20, y: 20 })],
    ['a batch', async (f) => await guest.rest('PATCH', '/api/canvas/positions/batch', { updates: [{ tileId: f.sparkId, x: 20, y: 20 }] })],
    ['a layout', async (f) => await guest.rest('POST', '/api/canvas/layout/compute', { roomId: f.roomId, algorithm: 'grid' })]
  ]
  for (const [label, act] of joins) {
    const f = await make()
    await act(f)
    t.ok((await memberOf(guest)).includes(f.roomId), `${label} joins`)
    t.same(await audience(f.roomId), [host.userId, guest.userId].sort(), `${label}: the guest is in the room's audience`)
    t.ok(await s.app.core.audience.canSee(guest.userId, { kind: 'room', roomId: f.roomId }))
  }

  const closing = await make()
  await guest.rest('GET', `/api/canvas/state?roomId=${closing.roomId}`)
  await host.rpc(RoomsService).updateRoom({ roomId: closing.roomId, isPublic: false })
  t.notOk((await memberOf(guest)).includes(closing.roomId), 'turning private ends the guest\'s membership')
  t.same(await audience(closing.roomId), [host.userId])
  t.notOk(await s.app.core.audience.canSee(guest.userId, { kind: 'room', roomId: closing.roomId }))
  t.ok(await s.app.core.audience.canSee(guest.userId, { kind: 'users', userIds: [guest.userId] }), 'a users audience is exactly its ids')
  t.same([...await s.app.core.audience.recipientsOf({ kind: 'users', userIds: [guest.userId, host.userId] })].sort(), [guest.userId, host.userId].sort())
})

t.test('account deletion removes the user\'s rooms (with every spark in them) and their sparks elsewhere', async (t) => {
  const leaving = await signInPerson(s, 'leaving')
  const staying = await signInPerson(s, 'staying')
  const ownRoom = (await leaving.rest('POST', '/api/rooms', { name: 'going away', isPublic: true })).json().data.id
  const guestSpark = (await staying.rest('POST', '/api/sparks', { title: 'guest in leaving\'s room', roomId: ownRoom, x: 0, y: 0 })).json().data.id
  await leaving.rest('POST', '/api/sparks', { title: 'own', roomId: ownRoom, x: 400, y: 0 })
  const otherRoom = (await staying.rest('POST', '/api/rooms', { name: 'staying', isPublic: true })).json().data.id
  const leftBehind = (await leaving.rest('POST', '/api/sparks', { title: 'in staying\'s room', roomId: otherRoom, x: 0, y: 0 })).json().data.id
  const kept = (await staying.rest('POST', '/api/sparks', { title: 'kept', roomId: otherRoom, x: 400, y: 0 })).json().data.id

  t.equal((await leaving.rest('POST', '/api/auth/request-deletion')).statusCode, 200)
  const { token } = lastMailTo(s.config, leaving.email)
  t.equal((await anonymous('POST', '/api/auth/confirm-deletion', { token })).statusCode, 204)

  t.equal((await staying.rest('GET', `/api/rooms/${ownRoom}`)).statusCode, 404, 'their room is gone')
  t.equal((await staying.rest('GET', `/api/sparks/${guestSpark}`)).statusCode, 404, 'with every spark in it, others\' too')
  t.equal((await staying.rest('GET', `/api/sparks/${leftBehind}`)).statusCode, 404, 'their sparks in other rooms are gone')
  t.equal((await staying.rest('GET', `/api/sparks/${kept}`)).statusCode, 200, 'other users\' sparks stay')
  t.equal((await staying.rest('GET', `/api/rooms/${otherRoom}`)).statusCode, 200)
  const { db } = s.app.deps
  const count = async (query: ReturnType<typeof sql<{ n: number }>>): Promise<number> => (await query.execute(db)).rows[0]?.n ?? -1
  t.equal(await count(sql<{ n: number }>`select count(*)::int as n from rooms where created_by = ${leaving.userId}`), 0)
  t.equal(await count(sql<{ n: number }>`select count(*)::int as n from sparks where created_by = ${leaving.userId} or room_id = ${ownRoom}`), 0)
  t.equal(await count(sql<{ n: number }>`select count(*)::int as n from room_members where user_id = ${leaving.userId} or room_id = ${ownRoom}`), 0)
})
