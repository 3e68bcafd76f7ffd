// Shelves of links (DECISIONS §10) on both transports: CRUD and visibility, link URL rules, order by
// fractional keys (a move writes one row), the 500-link and 100-shelf bounds, events to the owner's
// streams, and concurrent moves in one shelf (proved on Postgres; PGlite runs one transaction at a
// time, where the same test only shows the order stays consistent).
import t from 'tap'
import { Code } from '@connectrpc/connect'
import { ShelvesService } from '../src/gen/app/shelves/v1/shelves_pb.js'
import { LINKS_PER_SHELF_MAX, SHELVES_PER_USER_MAX } from '../src/core/shelves/shelves.types.js'
import { lastMailTo, startApp } from './helpers/app.js'
import { recordEvents } from './helpers/events.js'
import { anonymousRest, plain, rpcError, signInPerson, type Person } from './helpers/people.js'
import { seedLinks } from './helpers/shelves.js'

const s = await startApp()
t.teardown(s.close)
const events = recordEvents(s)
t.teardown(events.stop)

interface LinkJson { id: string, url: string, title: string, position: string, version: number, updatedAt: string }

async function newShelf (p: Person, body: Record<string, unknown> = {}): Promise<string> {
  const created = await p.rest('POST', '/api/shelves', { name: 'Reading', ...body })
  if (created.statusCode !== 201) throw new Error(`create: ${created.statusCode} ${created.body}`)
  return created.json().data.id as string
}

async function linksOf (p: Person, shelfId: string): Promise<LinkJson[]> {
  return (await p.rest('GET', `/api/shelves/${shelfId}`)).json().data.links as LinkJson[]
}

function titles (links: readonly LinkJson[]): string[] {
  return links.map((l) => l.title)
}

t.test('a shelf on both transports: create, read, list, update, delete', async (t) => {
  const owner = await signInPerson(s, 'shelver')
  const created = await owner.rest('POST', '/api/shelves', { name: 'Reading', description: 'to read' })
  t.equal(created.statusCode, 201)
  const shelf = created.json().data
  t.match(shelf, { name: 'Reading', description: 'to read', isPublic: false, ownerId: owner.userId, links: [], linkCount: 0, version: 1 })
  t.match(shelf.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)

  const viaRpc = await owner.rpc(ShelvesService, { binary: true }).getShelf({ shelfId: shelf.id })
  t.same(plain(viaRpc.shelf), shelf, 'RPC reads the same shelf')

  const second = (await owner.rpc(ShelvesService).createShelf({ name: 'Tools', isPublic: true })).shelf
  t.match(second, { name: 'Tools', isPublic: true, description: '', ownerId: owner.userId })
  const listed = await owner.rest('GET', '/api/shelves')
  t.same(listed.json().pagination, { page: 1, limit: 20, total: 2, totalPages: 1 })
  t.same(listed.json().data.map((x: { name: string }) => x.name), ['Tools', 'Reading'], 'newest first')
  t.notOk('links' in listed.json().data[0], 'a list carries link counts, not links')
  const rpcList = await owner.rpc(ShelvesService).listShelves({ limit: 1 })
  t.same(rpcList.shelves.map((x) => x.name), ['Tools'])
  t.equal(rpcList.pagination?.totalPages, 2)

  const renamed = await owner.rest('PATCH', `/api/shelves/${shelf.id as string}`, { name: 'Read later', isPublic: true })
  t.equal(renamed.statusCode, 200)
  t.match(renamed.json().data, { name: 'Read later', isPublic: true, version: 2 })
  t.equal((await owner.rest('PATCH', `/api/shelves/${shelf.id as string}`, {})).statusCode, 400, 'an update must change something')
  const rpcUpdated = await owner.rpc(ShelvesService).updateShelf({ shelfId: shelf.id, description: '' })
  t.match(rpcUpdated.shelf, { description: '', version: 3 })

  t.equal((await owner.rest('DELETE', `/api/shelves/${shelf.id as string}`)).statusCode, 204)
  t.equal((await owner.rest('GET', `/api/shelves/${shelf.id as string}`)).statusCode, 404)
  t.same(plain(await owner.rpc(ShelvesService).deleteShelf({ shelfId: second!.id })), {})
  t.equal((await rpcError(owner.rpc(ShelvesService).getShelf({ shelfId: second!.id }))).code, Code.NotFound)
})

t.test('bad shelf input is a validation error naming the field', async (t) => {
  const owner = await signInPerson(s, 'careless')
  const blank = await owner.rest('POST', '/api/shelves', { name: '   ' })
  t.equal(blank.statusCode, 400)
  t.equal(blank.json().details[0].field, 'name')
  const long = await owner.rest('POST', '/api/shelves', { name: 'x'.repeat(1_000_000) })
  t.equal(long.statusCode, 400)
  const rpcBad = await rpcError(owner.rpc(ShelvesService).createShelf({ name: '' }))
  t.equal(rpcBad.code, Code.InvalidArgument)
  t.match(rpcBad.rawMessage, /name/)
  t.equal((await anonymousRest(s)('GET', '/api/shelves')).statusCode, 401)
})

t.test('private shelves exist only for their owner; public ones are read-only to others', async (t) => {
  const owner = await signInPerson(s, 'private')
  const stranger = await signInPerson(s, 'stranger')
  const hidden = await newShelf(owner)
  const open = await newShelf(owner, { isPublic: true, name: 'Open' })
  const linkId = (await owner.rest('POST', `/api/shelves/${open}/links`, { url: 'https://example.org/a' })).json().data.id as string

  for (const [method, url, body] of [
    ['GET', `/api/shelves/${hidden}`], ['PATCH', `/api/shelves/${hidden}`, { name: 'mine' }], ['DELETE', `/api/shelves/${hidden}`],
    ['POST', `/api/shelves/${hidden}/links`, { url: 'https://x.test' }]
  ] as const) {
    t.equal((await stranger.rest(method, url, body)).statusCode, 404, `${method} ${url} of a private shelf`)
  }
  t.equal((await rpcError(stranger.rpc(ShelvesService).getShelf({ shelfId: hidden }))).code, Code.NotFound)

  t.equal((await stranger.rest('GET', `/api/shelves/${open}`)).statusCode, 200, 'a public shelf is readable')
  t.equal((await stranger.rest('PATCH', `/api/shelves/${open}`, { name: 'taken' })).statusCode, 403)
  t.equal((await stranger.rest('POST', `/api/shelves/${open}/links/${linkId}/move`, {})).statusCode, 403)
  t.equal((await stranger.rest('DELETE', `/api/shelves/${open}/links/${linkId}`)).statusCode, 403)
  t.equal((await rpcError(stranger.rpc(ShelvesService).addLink({ shelfId: open, url: 'https://x.test' }))).code, Code.PermissionDenied)

  const theirs = await stranger.rest('GET', `/api/shelves?userId=${owner.userId}`)
  t.same(theirs.json().data.map((x: { id: string }) => x.id), [open], 'another user\'s list holds their public shelves only')
  t.same((await stranger.rpc(ShelvesService).listShelves({ userId: owner.userId })).shelves.map((x) => x.id), [open])
  t.same((await owner.rest('GET', `/api/shelves?userId=${owner.userId}`)).json().pagination.total, 2, 'one\'s own id lists all of one\'s own')
})

t.test('links: URL rules, order, moves on both transports', async (t) => {
  const owner = await signInPerson(s, 'linker')
  const shelfId = await newShelf(owner)
  const add = async (url: string, extra: Record<string, unknown> = {}) => await owner.rest('POST', `/api/shelves/${shelfId}/links`, { url, ...extra })

  for (const [url, why] of [
    ['javascript:alert(1)', /http or https/], ['http://user:pass@example.com/', /user name or password/], ['https://trusted.example@evil.example/', /user name or password/],
    ['ftp://example.com/file', /http or https/], ['not a url', /absolute/], [`https://example.com/${'a'.repeat(2049 - 20)}`, /2048/]
  ] as const) {
    const refused = await add(url)
    t.equal(refused.statusCode, 400, `${url.slice(0, 40)} is refused`)
    t.equal(refused.json().details?.[0]?.field, 'url')
    t.match(refused.json().message, why)
  }
  t.equal((await rpcError(owner.rpc(ShelvesService).addLink({ shelfId, url: 'javascript:void(0)' }))).code, Code.InvalidArgument)
  t.equal((await linksOf(owner, shelfId)).length, 0, 'nothing was added')

  const exact = await add(`https://example.com/${'a'.repeat(2048 - 20)}`)
  t.equal(exact.statusCode, 201, 'a URL of exactly 2,048 characters is kept')
  const a = (await add('https://Example.COM/a', { title: 'A' })).json().data
  t.equal(a.url, 'https://example.com/a', 'stored as the WHATWG parser writes it')
  t.equal((await owner.rest('DELETE', `/api/shelves/${shelfId}/links/${exact.json().data.id as string}`)).statusCode, 204)
  const b = (await owner.rpc(ShelvesService, { binary: true }).addLink({ shelfId, url: 'https://example.com/b', title: 'B' })).link!
  const c = (await add('https://example.com/c', { title: 'C', afterLinkId: a.id })).json().data
  t.same(titles(await linksOf(owner, shelfId)), ['A', 'C', 'B'], 'last by default, or after the link named')

  const first = await owner.rest('POST', `/api/shelves/${shelfId}/links/${b.id}/move`, {})
  t.equal(first.statusCode, 200)
  t.match(first.json().data, { id: b.id, version: 2 })
  t.same(titles(await linksOf(owner, shelfId)), ['B', 'A', 'C'], 'no afterLinkId: first')
  const moved = await owner.rpc(ShelvesService).moveLink({ shelfId, linkId: b.id, afterLinkId: c.id })
  t.equal(moved.link?.version, 3)
  const order = await linksOf(owner, shelfId)
  t.same(titles(order), ['A', 'C', 'B'])
  t.ok(order.every((l, i) => i === 0 || order[i - 1]!.position < l.position), 'positions ascend bytewise')
  const untouched = order.filter((l) => l.id !== b.id)
  t.same(untouched.map((l) => l.version), [1, 1], 'a move rewrote the moved link alone')

  const same = await owner.rest('POST', `/api/shelves/${shelfId}/links/${b.id}/move`, { afterLinkId: c.id })
  t.equal(same.json().data.version, 3, 'a move to where the link already is writes nothing')

  const self = await owner.rest('POST', `/api/shelves/${shelfId}/links/${b.id}/move`, { afterLinkId: b.id })
  t.equal(self.statusCode, 400)
  t.equal(self.json().details[0].field, 'afterLinkId')
  t.equal((await owner.rest('POST', `/api/shelves/${shelfId}/links/link_nope/move`, {})).statusCode, 404)
  t.equal((await owner.rest('DELETE', `/api/shelves/${shelfId}/links/link_nope`)).statusCode, 404)
})

t.test('a move after a link on another shelf is refused, naming afterLinkId', async (t) => {
  const owner = await signInPerson(s, 'two-shelves')
  const one = await newShelf(owner)
  const two = await newShelf(owner)
  const [x] = await seedLinks(s, one, 1)
  const [y] = await seedLinks(s, two, 1)
  const refused = await owner.rest('POST', `/api/shelves/${one}/links/${x!}/move`, { afterLinkId: y })
  t.equal(refused.statusCode, 400)
  t.same(refused.json().details, [{ field: 'afterLinkId', issue: 'must be the id of a link on this shelf' }])
  const viaRpc = await rpcError(owner.rpc(ShelvesService).moveLink({ shelfId: one, linkId: x!, afterLinkId: y! }))
  t.equal(viaRpc.code, Code.InvalidArgument)
  t.match(viaRpc.rawMessage, /afterLinkId/)
  t.equal((await owner.rest('POST', `/api/shelves/${two}/links`, { url: 'https://x.test', afterLinkId: x })).statusCode, 400, 'adding after a foreign link too')
  t.equal((await owner.rest('POST', `/api/shelves/${two}/links/${x!}/move`, {})).statusCode, 404, 'moving a link through a shelf that does not hold it')
})

t.test('the 501st link and the 101st shelf are LimitReached / FAILED_PRECONDITION, and nothing is written', async (t) => {
  const owner = await signInPerson(s, 'hoarder')
  const shelfId = await newShelf(owner)
  await seedLinks(s, shelfId, LINKS_PER_SHELF_MAX)
  const over = await owner.rest('POST', `/api/shelves/${shelfId}/links`, { url: 'https://example.com/501' })
  t.equal(over.statusCode, 409)
  t.same(over.json(), { error: 'LimitReached', message: 'A shelf holds at most 500 links; remove one before adding another.' })
  t.equal((await rpcError(owner.rpc(ShelvesService).addLink({ shelfId, url: 'https://example.com/501' }))).code, Code.FailedPrecondition)
  t.equal((await owner.rest('GET', `/api/shelves/${shelfId}`)).json().data.linkCount, LINKS_PER_SHELF_MAX)

  const now = new Date()
  const rows = Array.from({ length: SHELVES_PER_USER_MAX - 1 }, (_, i) => ({ id: `shelf_seed${i}_${owner.userId}`, owner_id: owner.userId, name: `s${i}`, description: '', is_public: false, created_at: now, updated_at: now }))
  await s.app.deps.db.insertInto('shelves').values(rows).execute()
  const overShelf = await owner.rest('POST', '/api/shelves', { name: 'one too many' })
  t.equal(overShelf.statusCode, 409)
  t.equal(overShelf.json().error, 'LimitReached')
  t.equal((await rpcError(owner.rpc(ShelvesService).createShelf({ name: 'one too many' }))).code, Code.FailedPrecondition)
  t.equal((await owner.rest('GET', '/api/shelves')).json().pagination.total, SHELVES_PER_USER_MAX)
})

t.test('keys grown long by moves into one spot are rewritten evenly, once', async (t) => {
  const owner = await signInPerson(s, 'hammer')
  const shelfId = await newShelf(owner)
  const tight = ['a0' + '1'.repeat(70), 'a0' + '1'.repeat(71)]
  const [left, right] = await seedLinks(s, shelfId, 2, tight)
  const [last] = await seedLinks(s, shelfId, 1, ['a1'])
  const moved = await owner.rest('POST', `/api/shelves/${shelfId}/links/${last!}/move`, { afterLinkId: left })
  t.equal(moved.statusCode, 200)
  const order = await linksOf(owner, shelfId)
  t.same(order.map((l) => l.id), [left, last, right])
  t.ok(order.every((l) => l.position.length <= 4), `every key is short again (${order.map((l) => l.position).join(', ')})`)
  const event = await events.waitFor((e) => e.type === 'shelf:updated' && e.payload.id === shelfId)
  t.equal((event.payload as { moved?: unknown[] }).moved?.length, 3, 'the event names every link\'s new key')
})

t.test('events shelf:created/updated/deleted and link-added/removed go to the owner, small', async (t) => {
  const owner = await signInPerson(s, 'evented')
  const from = events.mark()
  const shelfId = await newShelf(owner, { isPublic: true })
  const created = await events.waitFor((e) => e.type === 'shelf:created' && e.payload.id === shelfId, from)
  t.same(created.audience, { kind: 'users', userIds: [owner.userId] })
  t.match(created.payload, { id: shelfId, links: [], version: 1 })
  const [one, two] = await seedLinks(s, shelfId, 2)
  const added = (await owner.rest('POST', `/api/shelves/${shelfId}/links`, { url: 'https://example.com/new' })).json().data
  const addedEvent = await events.waitFor((e) => e.type === 'shelf:link-added' && (e.payload as { shelfId: string }).shelfId === shelfId, from)
  t.same(addedEvent.payload, { shelfId, link: added })

  await owner.rest('POST', `/api/shelves/${shelfId}/links/${added.id as string}/move`, { afterLinkId: one })
  const moved = await events.waitFor((e) => e.type === 'shelf:updated' && e.payload.id === shelfId, from)
  const payload = moved.payload as Record<string, unknown>
  t.notOk('links' in payload, 'a move never carries the links')
  t.match(payload, { id: shelfId, version: 1, linkCount: 3, moved: [{ id: added.id, version: 2 }] })
  t.ok(JSON.stringify(payload).length < 1000, 'small')

  await owner.rest('PATCH', `/api/shelves/${shelfId}`, { name: 'Renamed' })
  const renamed = await events.waitFor((e) => e.type === 'shelf:updated' && e.payload.id === shelfId && (e.payload as { version: number }).version === 2, from)
  t.match(renamed.payload, { name: 'Renamed' })
  await owner.rest('DELETE', `/api/shelves/${shelfId}/links/${two!}`)
  const removed = await events.waitFor((e) => e.type === 'shelf:link-removed', from)
  t.same(removed.payload, { shelfId, linkId: two })
  await owner.rest('DELETE', `/api/shelves/${shelfId}`)
  const deleted = await events.waitFor((e) => e.type === 'shelf:deleted' && (e.payload as { id: string }).id === shelfId, from)
  t.same(deleted.audience, { kind: 'users', userIds: [owner.userId] })
})

t.test('20 parallel moves in one shelf leave a consistent order with no duplicate or lost position', async (t) => {
  const owner = await signInPerson(s, 'racer')
  const shelfId = await newShelf(owner)
  const ids = await seedLinks(s, shelfId, 20)
  // Every link moves at once, half of them after a neighbour, half to the front, on both transports.
  const results = await Promise.all(ids.map(async (id, i) => {
    const afterLinkId = i % 2 === 0 ? ids[(i + 7) % ids.length] : undefined
    if (i % 3 === 0) return (await owner.rpc(ShelvesService).moveLink({ shelfId, linkId: id, afterLinkId })).link?.position
    const reply = await owner.rest('POST', `/api/shelves/${shelfId}/links/${id}/move`, afterLinkId === undefined ? {} : { afterLinkId })
    return reply.statusCode === 200 ? reply.json().data.position as string : `status ${reply.statusCode}`
  }))
  t.ok(results.every((p) => p !== undefined && !p.startsWith('status')), `every move succeeded (${results.join(', ')})`)
  const after = await linksOf(owner, shelfId)
  t.equal(after.length, 20, 'no link lost')
  t.same(new Set(after.map((l) => l.id)), new Set(ids), 'the same links')
  t.equal(new Set(after.map((l) => l.position)).size, 20, 'no duplicate position')
  t.ok(after.every((l, i) => i === 0 || after[i - 1]!.position < l.position), 'strictly ascending')
  const rpcOrder = (await owner.rpc(ShelvesService).getShelf({ shelfId })).shelf?.links.map((l) => l.id)
  t.same(rpcOrder, after.map((l) => l.id), 'both transports read one order')
})

t.test('account deletion removes the user\'s shelves and their links', async (t) => {
  const leaving = await signInPerson(s, 'leaving')
  const shelfId = await newShelf(leaving, { isPublic: true })
  await seedLinks(s, shelfId, 3)
  t.equal((await leaving.rest('POST', '/api/auth/request-deletion')).statusCode, 200)
  const { token } = lastMailTo(s.config, leaving.email)
  t.equal((await anonymousRest(s)('POST', '/api/auth/confirm-deletion', { token })).statusCode, 204)
  const db = s.app.deps.db
  t.equal((await db.selectFrom('shelves').select('id').where('owner_id', '=', leaving.userId).execute()).length, 0)
  t.equal((await db.selectFrom('shelf_links').select('id').where('shelf_id', '=', shelfId).execute()).length, 0)
})
