// Idempotency-Key on creates (issue 33, DECISIONS §15), REST and RPC: a retry with the same key and
// body replays the first answer (one row, whatever the number of parallel retries); another body is
// 422; a bad key is 400 naming the header; keys are per user; a retry after a restart replays too.
import t from 'tap'
import { Code } from '@connectrpc/connect'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { pruneExpiredRows } from '../src/core/retention/retention.js'
import { RoomsService } from '../src/gen/app/rooms/v1/rooms_pb.js'
import { startApp, testEnv, type TestApp } from './helpers/app.js'
import { rpcError, signInPerson } from './helpers/people.js'
import { formOf, SAMPLES, uploadClient } from './helpers/uploads.js'

const unlimited = 1_000_000_000
const limits = { rateLimit: { maxOverride: { strict: unlimited, expensive: unlimited, upload: unlimited, canvas: unlimited, write: unlimited, read: unlimited, standard: unlimited } } }
const s = await startApp({}, limits)
t.teardown(s.close)
const alice = await signInPerson(s, 'idem-alice')
const bob = await signInPerson(s, 'idem-bob')
let n = 0
const newKey = (): string => `key-${process.pid}-${Date.now()}-${n++}`

async function roomsNamed (app: TestApp, name: string): Promise<number> {
  const row = await app.app.deps.db.selectFrom('rooms').select((eb) => eb.fn.countAll<string>().as('n')).where('name', '=', name).executeTakeFirstOrThrow()
  return Number(row.n)
}

t.test('a retry with the same key and body replays the first answer; one room', async (t) => {
  const key = newKey()
  const name = `Idem ${key}`
  const first = await alice.rest('POST', '/api/rooms', { name }, { 'idempotency-key': key })
  t.equal(first.statusCode, 201)
  t.equal(first.headers['idempotent-replayed'], undefined)
  const again = await alice.rest('POST', '/api/rooms', { name }, { 'idempotency-key': key })
  t.equal(again.statusCode, 201)
  t.equal(again.headers['idempotent-replayed'], 'true')
  t.same(again.json(), first.json(), 'the same body')
  t.equal(await roomsNamed(s, name), 1)
  const without = await alice.rest('POST', '/api/rooms', { name })
  t.equal(without.statusCode, 201, 'without a key, a create runs as before')
  t.not(without.json().data.id, first.json().data.id)
})

t.test('the same key with another body is 422; another user\'s same key is independent', async (t) => {
  const key = newKey()
  t.equal((await alice.rest('POST', '/api/rooms', { name: `A ${key}` }, { 'idempotency-key': key })).statusCode, 201)
  const other = await alice.rest('POST', '/api/rooms', { name: `B ${key}` }, { 'idempotency-key': key })
  t.equal(other.statusCode, 422)
  t.equal(other.json().error, 'IdempotencyKeyReused')
  t.equal(other.json().details[0].field, 'Idempotency-Key')
  const elsewhere = await alice.rest('POST', '/api/shelves', { name: `A ${key}` }, { 'idempotency-key': key })
  t.equal(elsewhere.statusCode, 422, 'the same key on another route is another request')
  const bobs = await bob.rest('POST', '/api/rooms', { name: `A ${key}` }, { 'idempotency-key': key })
  t.equal(bobs.statusCode, 201, 'keys are per user')
  t.equal(bobs.headers['idempotent-replayed'], undefined)
  t.equal(await roomsNamed(s, `A ${key}`), 2)
})

t.test('an over-long or non-token key is 400 naming the header, and nothing is created', async (t) => {
  for (const key of ['k'.repeat(256), 'with space', 'tab\there', 'ünïcode']) {
    const name = `Bad ${newKey()}`
    const res = await alice.rest('POST', '/api/rooms', { name }, { 'idempotency-key': key })
    t.equal(res.statusCode, 400, JSON.stringify(key.slice(0, 20)))
    t.equal(res.json().error, 'ValidationError')
    t.equal(res.json().details[0].field, 'Idempotency-Key')
    t.equal(await roomsNamed(s, name), 0)
  }
  t.equal((await alice.rest('POST', '/api/rooms', { name: `Max ${newKey()}` }, { 'idempotency-key': 'k'.repeat(255) })).statusCode, 201, '255 characters is fine')
})

t.test('20 parallel retries with one key make one room, and all get its answer', async (t) => {
  const key = newKey()
  const name = `Parallel ${key}`
  const answers = await Promise.all(Array.from({ length: 20 }, async () => await alice.rest('POST', '/api/rooms', { name }, { 'idempotency-key': key })))
  t.same(answers.map((a) => a.statusCode), Array(20).fill(201), 'every retry got the answer (none told 409)')
  t.equal(new Set(answers.map((a) => a.json().data.id)).size, 1, 'one id')
  t.equal(answers.filter((a) => a.headers['idempotent-replayed'] === undefined).length, 1, 'one execution')
  t.equal(await roomsNamed(s, name), 1, 'one row')
})

t.test('a spark replays its ETag; a failed create is not stored', async (t) => {
  const room = (await alice.rest('POST', '/api/rooms', { name: `Sparks ${newKey()}` })).json().data.id as string
  const key = newKey()
  const first = await alice.rest('POST', '/api/sparks', { roomId: room, title: 'S', x: 0, y: 0 }, { 'idempotency-key': key })
  const again = await alice.rest('POST', '/api/sparks', { roomId: room, title: 'S', x: 0, y: 0 }, { 'idempotency-key': key })
  t.equal(again.statusCode, 201)
  t.equal(again.headers.etag, first.headers.etag)
  t.equal(again.json().data.id, first.json().data.id)
  const missing = await alice.rest('POST', '/api/sparks', { roomId: 'room_missing', title: 'S', x: 0, y: 0 }, { 'idempotency-key': newKey() })
  t.equal(missing.statusCode, 404)
})

t.test('uploads: a retried upload with the same key keeps one file', async (t) => {
  const client = uploadClient(s)
  const key = newKey()
  const form = (): FormData => formOf(['type', 'avatar'], { filename: 'a.png', content: SAMPLES.png, type: 'image/png' })
  const first = await client.post(alice.cookie, form(), '/api/uploads', { 'idempotency-key': key })
  t.equal(first.status, 201)
  const again = await client.post(alice.cookie, form(), '/api/uploads', { 'idempotency-key': key })
  t.equal(again.status, 201)
  t.equal(again.headers.get('idempotent-replayed'), 'true')
  t.equal(again.json().data?.id, first.json().data?.id)
})

t.test('RPC: CreateRoom with an Idempotency-Key header replays; another request is INVALID_ARGUMENT', async (t) => {
  for (const binary of [false, true]) {
    const client = alice.rpc(RoomsService, { binary })
    const key = newKey()
    const name = `Rpc ${key}`
    const first = await client.createRoom({ name }, { headers: { 'idempotency-key': key } })
    const again = await client.createRoom({ name }, { headers: { 'idempotency-key': key } })
    t.equal(again.room?.id, first.room?.id, binary ? 'binary' : 'JSON')
    t.equal(await roomsNamed(s, name), 1)
    const other = await rpcError(client.createRoom({ name: `${name}!` }, { headers: { 'idempotency-key': key } }))
    t.equal(other.code, Code.InvalidArgument)
    const bad = await rpcError(client.createRoom({ name }, { headers: { 'idempotency-key': 'a b' } }))
    t.equal(bad.code, Code.InvalidArgument)
    t.match(bad.message, /Idempotency-Key/)
  }
})

t.test('a retry after a server restart replays the stored answer', async (t) => {
  const config = loadConfig(testEnv())
  const first = await buildApp(config, limits)
  const app1: TestApp = { app: first, config, url: await first.listen({ port: 0, host: '127.0.0.1' }), close: async () => { await first.close() } }
  const carol = await signInPerson(app1, 'idem-carol')
  const key = newKey()
  const name = `Restart ${key}`
  const before = await carol.rest('POST', '/api/rooms', { name }, { 'idempotency-key': key })
  t.equal(before.statusCode, 201)
  await app1.close()

  const second = await buildApp(config, limits)
  t.teardown(async () => { await second.close() })
  const after = await second.inject({ method: 'POST', url: '/api/rooms', cookies: { app_session: carol.cookie }, headers: { 'idempotency-key': key }, payload: { name } })
  t.equal(after.statusCode, 201)
  t.equal(after.headers['idempotent-replayed'], 'true')
  t.same(after.json(), before.json())
  const count = await second.deps.db.selectFrom('rooms').select((eb) => eb.fn.countAll<string>().as('n')).where('name', '=', name).executeTakeFirstOrThrow()
  t.equal(Number(count.n), 1)
})

t.test('expired keys: an expired key runs the create again; expired rows are pruned', async (t) => {
  const config = loadConfig(testEnv())
  const app = await buildApp(config, limits)
  t.teardown(async () => { await app.close() })
  const target: TestApp = { app, config, url: await app.listen({ port: 0, host: '127.0.0.1' }), close: async () => { await app.close() } }
  const dave = await signInPerson(target, 'idem-dave')
  const past = new Date(Date.now() - 25 * 60 * 60 * 1000)
  const key = newKey()
  const stale = { user_id: dave.userId, account_id: dave.userId, fingerprint: 'x', outcome: JSON.stringify({ value: { id: 'old' } }), created_at: past, expires_at: new Date(past.getTime() + 1000) }
  await app.deps.db.insertInto('idempotency_keys').values([{ ...stale, idem_key: key }, { ...stale, idem_key: `${key}-other` }]).execute()
  const res = await dave.rest('POST', '/api/rooms', { name: `Expired ${key}` }, { 'idempotency-key': key })
  t.equal(res.statusCode, 201)
  t.equal(res.headers['idempotent-replayed'], undefined, 'an expired key is a new request')
  t.not(res.json().data.id, 'old')
  // Expired keys go with every other expired row, in retention's runs (src/core/retention/).
  await pruneExpiredRows(app.deps)
  const left = (await app.deps.db.selectFrom('idempotency_keys').select('idem_key').where('user_id', '=', dave.userId).where('expires_at', '<=', new Date()).execute()).length
  t.equal(left, 0, 'expired rows pruned')
})
