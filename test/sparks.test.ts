// Sparks on both transports: create/read across transports, listing and paging, validation of
// title/content/coordinates, edits with optimistic concurrency (If-Match / expectedVersion),
// delete permissions, MoveSpark, and the events of each write (and none for failed writes).
import t from 'tap'
import { Code } from '@connectrpc/connect'
import { SparksService } from '../src/gen/app/sparks/v1/sparks_pb.js'
import { BadRequestSchema } from '../src/gen/google/rpc/error_details_pb.js'
import { startApp } from './helpers/app.js'
import { recordEvents } from './helpers/events.js'
import { plain, rpcError, signInPerson, type Person } from './helpers/people.js'

const s = await startApp()
t.teardown(s.close)
const bus = recordEvents(s)
t.teardown(bus.stop)

async function publicRoom (owner: Person, name = 'Sparks room'): Promise<string> {
  const res = await owner.rest('POST', '/api/rooms', { name, isPublic: true })
  if (res.statusCode !== 201) throw new Error(res.body)
  return res.json().data.id
}

t.test('REST create → RPC read and RPC create (binary) → REST read; spark:created', async (t) => {
  const owner = await signInPerson(s, 'creator')
  const roomId = await publicRoom(owner)
  const created = await owner.rest('POST', '/api/sparks', { title: 'Idea', content: 'Details', roomId, x: 33, y: 47 })
  t.equal(created.statusCode, 201)
  const spark = created.json().data
  t.match(spark, { title: 'Idea', content: 'Details', roomId, x: 33, y: 47, createdBy: owner.userId, version: 1 })
  t.match(spark.id, /^spark_/)
  t.match(spark.createdAt, /\.\d{3}Z$/)
  t.equal(created.headers.etag, '"1"', 'the version is the ETag')
  t.same(plain((await owner.rpc(SparksService).getSpark({ sparkId: spark.id })).spark), spark)
  t.same(plain((await owner.rpc(SparksService, { binary: true }).getSpark({ sparkId: spark.id })).spark), spark)

  const event = await bus.waitFor((e) => e.type === 'spark:created' && e.payload.id === spark.id)
  t.same(event.payload, spark, 'the full spark')
  t.same(event.audience, { kind: 'room', roomId, sparkId: spark.id }, 'a spark\'s event names it: a hidden spark\'s reach its creator alone')
  t.equal(event.userId, owner.userId)

  const viaRpc = (await owner.rpc(SparksService, { binary: true }).createSpark({ title: 'Zero', content: '', roomId, x: 0, y: 0 })).spark
  t.equal(viaRpc?.x, 0, 'zero is a position, not a missing one')
  const read = await owner.rest('GET', `/api/sparks/${viaRpc?.id ?? ''}`)
  t.equal(read.statusCode, 200)
  t.same(read.json().data, plain(viaRpc))
  t.equal(read.headers.etag, '"1"')

  const noContent = await owner.rest('POST', '/api/sparks', { title: 'Headline only', roomId, x: -20, y: 1_000_000 })
  t.equal(noContent.statusCode, 201, 'content may be left out (empty note); the range is inclusive')
  t.equal(noContent.json().data.content, '')
})

t.test('listing a room\'s sparks, paged, the same on both transports', async (t) => {
  const owner = await signInPerson(s, 'lister')
  const roomId = await publicRoom(owner)
  const ids: string[] = []
  for (let i = 0; i < 5; i++) ids.push((await owner.rest('POST', '/api/sparks', { title: `S${i}`, roomId, x: i * 220, y: 0 })).json().data.id)
  const page = await owner.rest('GET', `/api/sparks?roomId=${roomId}&limit=2&page=2`)
  t.equal(page.statusCode, 200)
  t.same(page.json().data.map((x: { id: string }) => x.id), ids.slice(2, 4), 'oldest first')
  t.same(page.json().pagination, { page: 2, limit: 2, total: 5, totalPages: 3 })
  for (const binary of [false, true]) {
    const viaRpc = await owner.rpc(SparksService, { binary }).listSparks({ roomId, page: 2, limit: 2 })
    t.same(plain(viaRpc.sparks), page.json().data)
    t.same(plain(viaRpc.pagination), page.json().pagination)
  }
  t.same((await owner.rest('GET', `/api/sparks?roomId=${roomId}&page=4&limit=2`)).json(), { data: [], pagination: { page: 4, limit: 2, total: 5, totalPages: 3 } })
  t.same((await owner.rest('GET', `/api/sparks?roomId=${roomId}&limit=100`)).json().pagination, { page: 1, limit: 100, total: 5, totalPages: 1 })
  for (const query of [`roomId=${roomId}&limit=101`, `roomId=${roomId}&page=0`, `roomId=${roomId}&page=x`, 'page=1']) {
    t.equal((await owner.rest('GET', `/api/sparks?${query}`)).statusCode, 400, query)
  }
  t.equal((await rpcError(owner.rpc(SparksService).listSparks({ roomId, limit: 101 }))).code, Code.InvalidArgument)
  t.equal((await rpcError(owner.rpc(SparksService).listSparks({ roomId: '' }))).code, Code.InvalidArgument)
  const emptyRoom = await publicRoom(owner, 'empty')
  t.same((await owner.rest('GET', `/api/sparks?roomId=${emptyRoom}`)).json().pagination, { page: 1, limit: 20, total: 0, totalPages: 0 })
})

t.test('validation of title, content and coordinates; nothing is created or published', async (t) => {
  const owner = await signInPerson(s, 'strict')
  const roomId = await publicRoom(owner)
  const mark = bus.mark()
  const good = { title: 'ok', content: '', roomId, x: 0, y: 0 }
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['empty title', { ...good, title: '' }, 'title'],
    ['201-character title', { ...good, title: 't'.repeat(201) }, 'title'],
    ['10001-character content', { ...good, content: 'c'.repeat(10_001) }, 'content'],
    ['x as a string', { ...good, x: '10' }, 'x'],
    ['y null', { ...good, y: null }, 'y'],
    ['x beyond the range', { ...good, x: 1_000_001 }, 'x'],
    ['y below the range', { ...good, y: -1_000_001 }, 'y'],
    ['missing x', { title: 'ok', roomId, y: 0 }, 'x'],
    ['missing roomId', { title: 'ok', x: 0, y: 0 }, 'roomId']
  ]
  for (const [label, body, field] of cases) {
    const res = await owner.rest('POST', '/api/sparks', body)
    t.equal(res.statusCode, 400, label)
    t.equal(res.json().details[0].field, field, label)
  }
  const missing = await owner.rest('POST', '/api/sparks', { title: 'ok', roomId })
  t.same(missing.json().details, [{ field: 'x', issue: 'is required' }, { field: 'y', issue: 'is required' }])
  const nonFinite = await owner.rest('POST', '/api/sparks', '{"title":"ok","roomId":"' + roomId + '","x":1e999,"y":0}', { 'content-type': 'application/json' })
  t.equal(nonFinite.statusCode, 400, 'a JSON number that overflows to Infinity')

  for (const binary of [false, true]) {
    const sparks = owner.rpc(SparksService, { binary })
    const format = binary ? 'binary' : 'JSON'
    for (const [label, x] of [['NaN', Number.NaN], ['Infinity', Number.POSITIVE_INFINITY], ['-Infinity', Number.NEGATIVE_INFINITY]] as const) {
      const error = await rpcError(sparks.createSpark({ title: 'ok', content: '', roomId, x, y: 0 }))
      t.equal(error.code, Code.InvalidArgument, `${format}: x ${label}`)
      t.equal(error.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field, 'x')
    }
    const absent = await rpcError(sparks.createSpark({ title: 'ok', content: '', roomId, y: 0 }))
    t.same(absent.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => [v.field, v.description]), [['x', 'is required']], `${format}: unset x is required`)
    t.equal((await rpcError(sparks.createSpark({ title: '', content: '', roomId, x: 0, y: 0 }))).code, Code.InvalidArgument)
  }
  const marker = (await owner.rest('POST', '/api/sparks', { ...good, title: 'marker' })).json().data.id
  await bus.waitFor((e) => e.type === 'spark:created' && e.payload.id === marker, mark)
  t.equal(bus.matching((e) => e.type === 'spark:created' && e.payload.roomId === roomId, mark).length, 1, 'only the marker was published')
  t.equal((await owner.rest('GET', `/api/sparks?roomId=${roomId}`)).json().pagination.total, 1, 'and only the marker exists')
})

t.test('edits: version +1 per change, If-Match / expectedVersion guard against stale writes (412 / ABORTED)', async (t) => {
  const owner = await signInPerson(s, 'editor')
  const roomId = await publicRoom(owner)
  const spark = (await owner.rest('POST', '/api/sparks', { title: 'v1', content: 'a', roomId, x: 0, y: 0 })).json().data

  const edited = await owner.rest('PATCH', `/api/sparks/${spark.id}`, { title: 'v2' }, { 'if-match': '1' })
  t.equal(edited.statusCode, 200)
  t.match(edited.json().data, { id: spark.id, title: 'v2', content: 'a', version: 2 })
  t.equal(edited.headers.etag, '"2"')
  const updatedEvent = await bus.waitFor((e) => e.type === 'spark:updated' && e.payload.id === spark.id && e.payload.version === 2)
  t.same(updatedEvent.payload, edited.json().data)
  t.same(updatedEvent.audience, { kind: 'room', roomId, sparkId: spark.id }, 'a spark\'s event names it: a hidden spark\'s reach its creator alone')
  t.equal(updatedEvent.userId, owner.userId)

  const mark = bus.mark()
  const stale = await owner.rest('PATCH', `/api/sparks/${spark.id}`, { title: 'lost' }, { 'if-match': '1' })
  t.equal(stale.statusCode, 412, 'a stale If-Match is refused: 412 (RFC 9110), not 409')
  t.equal(stale.json().error, 'PreconditionFailed')
  t.match(stale.json().message, /version 2/)
  const staleRpc = await rpcError(owner.rpc(SparksService, { binary: true }).updateSpark({ sparkId: spark.id, content: 'lost', expectedVersion: 1 }))
  t.equal(staleRpc.code, Code.Aborted)
  t.equal((await owner.rest('PATCH', `/api/sparks/${spark.id}`, { title: 'x' }, { 'if-match': 'abc' })).statusCode, 400, 'a malformed If-Match')
  t.equal((await rpcError(owner.rpc(SparksService).updateSpark({ sparkId: spark.id, title: 'x', expectedVersion: 0 }))).code, Code.InvalidArgument)
  t.equal((await owner.rest('PATCH', `/api/sparks/${spark.id}`, {})).statusCode, 400, 'nothing to change')
  t.equal((await owner.rest('PATCH', `/api/sparks/${spark.id}`, { x: 5 })).statusCode, 400, 'positions are not edited here')

  t.equal((await owner.rest('PATCH', `/api/sparks/${spark.id}`, { content: 'b' }, { 'if-match': '"2"' })).json().data.version, 3, 'a quoted ETag')
  t.equal((await owner.rest('PATCH', `/api/sparks/${spark.id}`, { content: 'c' }, { 'if-match': 'W/"3"' })).json().data.version, 4, 'a weak ETag')
  t.equal((await owner.rest('PATCH', `/api/sparks/${spark.id}`, { content: 'd' }, { 'if-match': '*' })).json().data.version, 5, 'any version')
  t.equal((await owner.rest('PATCH', `/api/sparks/${spark.id}`, { content: 'e' })).json().data.version, 6, 'no condition')
  const viaRpc = await owner.rpc(SparksService).updateSpark({ sparkId: spark.id, title: 'v7', expectedVersion: 6 })
  t.match(plain(viaRpc.spark), { title: 'v7', content: 'e', version: 7 })

  const moved = await owner.rest('PATCH', `/api/sparks/${spark.id}/position`, { x: 40, y: 40 })
  t.equal(moved.json().data.spark.version, 8, 'a move is a change too')
  t.equal((await owner.rest('PATCH', `/api/sparks/${spark.id}`, { title: 'late' }, { 'if-match': '7' })).statusCode, 412, 'so an edit based on the version before the move is stale')

  await bus.waitFor((e) => e.type === 'spark:updated' && e.payload.id === spark.id && e.payload.version === 7, mark)
  t.same(bus.matching((e) => e.type === 'spark:updated' && e.payload.id === spark.id, mark).map((e) => e.type === 'spark:updated' ? e.payload.version : 0), [3, 4, 5, 6, 7], 'no event for a refused edit')
})

t.test('concurrent edits with the same If-Match: exactly one wins', async (t) => {
  const owner = await signInPerson(s, 'racer')
  const roomId = await publicRoom(owner)
  const spark = (await owner.rest('POST', '/api/sparks', { title: 'race', roomId, x: 0, y: 0 })).json().data
  const results = await Promise.all(Array.from({ length: 8 }, async (_, i) => await owner.rest('PATCH', `/api/sparks/${spark.id}`, { title: `writer ${i}` }, { 'if-match': '1' })))
  t.same(results.map((r) => r.statusCode).sort(), [200, 412, 412, 412, 412, 412, 412, 412])
  t.equal((await owner.rest('GET', `/api/sparks/${spark.id}`)).json().data.version, 2)
})

t.test('delete: by the spark\'s creator or the room\'s creator; spark:deleted { id, roomId }', async (t) => {
  const owner = await signInPerson(s, 'roomowner')
  const author = await signInPerson(s, 'author')
  const bystander = await signInPerson(s, 'bystander')
  const roomId = await publicRoom(owner)
  const mine = (await author.rest('POST', '/api/sparks', { title: 'by author', roomId, x: 0, y: 0 })).json().data
  const second = (await author.rpc(SparksService).createSpark({ title: 'also by author', content: '', roomId, x: 300, y: 0 })).spark?.id ?? ''

  const mark = bus.mark()
  t.equal((await bystander.rest('DELETE', `/api/sparks/${mine.id}`)).statusCode, 403, 'a bystander may not delete')
  t.equal((await rpcError(bystander.rpc(SparksService).deleteSpark({ sparkId: mine.id }))).code, Code.PermissionDenied)
  t.equal((await bystander.rest('PATCH', `/api/sparks/${mine.id}`, { title: 'mine now' })).statusCode, 403, 'nor edit')
  t.equal((await author.rest('PATCH', `/api/sparks/${mine.id}`, { title: 'edited by author' })).statusCode, 200, 'the author may edit')
  t.equal((await owner.rest('PATCH', `/api/sparks/${mine.id}`, { content: 'edited by room owner' })).statusCode, 200, 'the room owner may edit')

  const lastVersion = (await owner.rest('GET', `/api/sparks/${mine.id}`)).json().data.version as number
  const deleted = await author.rest('DELETE', `/api/sparks/${mine.id}`)
  t.equal(deleted.statusCode, 204)
  const event = await bus.waitFor((e) => e.type === 'spark:deleted' && e.payload.id === mine.id, mark)
  t.same(event.payload, { id: mine.id, roomId, version: lastVersion }, 'with the version the spark had when deleted')
  t.same(event.audience, { kind: 'room', roomId, sparkId: mine.id }, 'a spark\'s event names it: a hidden spark\'s reach its creator alone')
  t.equal(event.userId, author.userId)
  t.same(plain(await owner.rpc(SparksService, { binary: true }).deleteSpark({ sparkId: second })), {}, 'the room owner deletes another user\'s spark')
  await bus.waitFor((e) => e.type === 'spark:deleted' && e.payload.id === second, mark)
  t.equal(bus.matching((e) => e.type === 'spark:deleted' && e.payload.roomId === roomId, mark).length, 2, 'refused deletes published nothing')
  t.equal((await owner.rest('GET', `/api/sparks/${mine.id}`)).statusCode, 404)
  t.equal((await author.rest('DELETE', `/api/sparks/${mine.id}`)).statusCode, 404, 'deleting twice')
})

t.test('MoveSpark / PATCH /api/sparks/:id/position: snapped, collision-checked, position:updated', async (t) => {
  const owner = await signInPerson(s, 'mover')
  const roomId = await publicRoom(owner)
  const a = (await owner.rest('POST', '/api/sparks', { title: 'a', roomId, x: 0, y: 0 })).json().data
  const b = (await owner.rest('POST', '/api/sparks', { title: 'b', roomId, x: 1000, y: 0 })).json().data

  const moved = await owner.rest('PATCH', `/api/sparks/${b.id}/position`, { x: 33, y: 47 })
  t.equal(moved.statusCode, 200)
  t.same(moved.json().data.position, { tileId: b.id, x: 40, y: 40, version: 2, snapped: true, collisionDetected: true })
  t.match(moved.json().data.spark, { id: b.id, x: 40, y: 40, version: 2 })
  const event = await bus.waitFor((e) => e.type === 'position:updated' && e.payload.tileId === b.id)
  t.same(event.payload, moved.json().data.position, 'the payload is the PositionResult')
  t.same(event.audience, { kind: 'room', roomId, sparkId: b.id }, 'a spark\'s event names it: a hidden spark\'s reach its creator alone')
  t.equal(event.userId, owner.userId)

  for (const [i, binary] of [false, true].entries()) {
    const viaRpc = await owner.rpc(SparksService, { binary }).moveSpark({ sparkId: b.id, x: 400, y: 60 })
    t.same(plain(viaRpc.position), { tileId: b.id, x: 400, y: 60, version: 3 + i, snapped: false, collisionDetected: false })
    t.match(plain(viaRpc.spark), { id: b.id, x: 400, y: 60 })
  }
  const missing = await rpcError(owner.rpc(SparksService).moveSpark({ sparkId: b.id, x: 10 }))
  t.same(missing.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => [v.field, v.description]), [['y', 'is required']])
  t.equal((await owner.rest('PATCH', `/api/sparks/${b.id}/position`, { x: 'left', y: 0 })).statusCode, 400)
  t.equal((await owner.rest('PATCH', '/api/sparks/spark_nope/position', { x: 0, y: 0 })).statusCode, 404)
  t.equal((await owner.rest('GET', `/api/sparks/${a.id}`)).json().data.version, 1, 'the other tile was not touched')
})
