// Idempotency covers the whole request and every create (issue 38 item 4, DECISIONS §17): every REST
// POST that creates something takes the key (the app's route table is walked; the POSTs that create
// nothing are listed with why); each newly covered create made twice with one key makes one entry
// and replays the first answer (REST and their RPC twins); an upload's whole file is its fingerprint
// (another file under the key is 422 and the first is untouched); a retry arriving while a slow
// first request's body is still on its way waits for it or is told 409 with Retry-After, never runs
// a second time, and the first request gets its own answer. Runs on PGlite and Postgres; the races
// prove something on Postgres only.
import t, { type Test } from 'tap'
import http from 'node:http'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { RouteOptions } from 'fastify'
import { Code } from '@connectrpc/connect'
import { startApp, uniqueClientIp } from './helpers/app.js'
import { startOidcProvider } from './helpers/oidc-provider.js'
import { rpcError, signInPerson, type Person } from './helpers/people.js'
import { formOf, pngOfSize, SAMPLES, uploadClient } from './helpers/uploads.js'
import { PassportService } from '../src/gen/app/passport/v1/passport_pb.js'
import { RoomsService } from '../src/gen/app/rooms/v1/rooms_pb.js'

const unlimited = 1_000_000_000
const routes: RouteOptions[] = []
const provider = await startOidcProvider()
t.teardown(provider.close)
const s = await startApp({ OIDC_ISSUER: provider.issuer, OIDC_AUDIENCE: provider.audience }, {
  rateLimit: { maxOverride: { strict: unlimited, expensive: unlimited, upload: unlimited, canvas: unlimited, write: unlimited, read: unlimited, standard: unlimited } },
  onRoute: (route) => { routes.push(route) }
})
t.teardown(s.close)
const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
let n = 0
const newKey = (): string => `key-${run}-${n++}`

/** The REST POSTs that create nothing, and why a retry needs no key. */
const CREATE_NOTHING: Record<string, string> = {
  '/api/auth/request-login': 'sends a sign-in link (a repeat sends another; the strict tier bounds them)',
  '/api/auth/logout': 'ends the session',
  '/api/auth/request-deletion': 'sends a confirmation link',
  '/api/auth/confirm-deletion': 'deletes the account once (its token is then used)',
  '/api/canvas/cursor': 'moves the cursor',
  '/api/canvas/cursor/leave': 'leaves the canvas',
  '/api/canvas/presence': 'marks the caller present (again: still present)',
  '/api/canvas/layout/compute': 'moves tiles to computed places (the same places again)',
  '/api/canvas/layout/validate': 'computes a report',
  '/api/classify/': 'computes labels',
  '/api/cv/parse': 'a preview; changes nothing',
  '/api/invites/accept': 'joins once (the token is then used)',
  '/api/messages/:messageId/read': 'a read marker',
  '/api/rtc/token': 'mints a token',
  '/api/shelves/:shelfId/links/:linkId/move': 'a move',
  '/api/users/avatar': 'sets the avatar: the previous avatar upload is deleted, so a repeat leaves one',
  '/api/admin/reports/:reportId/resolve': 'resolves a report once (again: 409)',
  '/api/admin/appeals/:appealId/decide': 'decides an appeal once (again: 409)',
  '/api/admin/users/:userId/unsuspend': 'lifts suspensions (again: nothing left to lift)'
}

t.test('every REST POST that creates something takes an Idempotency-Key (the route table walked)', async (t) => {
  const posts = routes.filter((r) => [r.method].flat().includes('POST') && r.url.startsWith('/api/'))
  t.ok(posts.length > 20, `${posts.length} POST routes`)
  const bare = posts.filter((r) => r.config?.idempotent !== true && CREATE_NOTHING[r.url] === undefined).map((r) => r.url)
  t.same(bare, [], 'a POST that creates must say `config: { idempotent: true }` (or be listed here with why it creates nothing)')
  const listedButKeyed = posts.filter((r) => r.config?.idempotent === true && CREATE_NOTHING[r.url] !== undefined).map((r) => r.url)
  t.same(listedButKeyed, [], 'listed as creating nothing, yet keyed')
  const stale = Object.keys(CREATE_NOTHING).filter((url) => !posts.some((r) => r.url === url))
  t.same(stale, [], 'every listed route exists')
})

async function count (table: 'passport_skills' | 'passport_experience' | 'appeals' | 'room_widgets' | 'motd' | 'widgets', column: string, value: string): Promise<number> {
  const row = await s.app.deps.db.selectFrom(table).select((eb) => eb.fn.countAll<string>().as('n')).where(column as never, '=', value as never).executeTakeFirstOrThrow()
  return Number(row.n)
}

/** Sends `payload` twice under one key: the first creates (201), the second replays it. */
async function twice (t: Test, send: (headers: Record<string, string>) => Promise<{ statusCode: number, headers: Record<string, unknown>, json: () => { data: { id: string } } }>, expectedStatus = 201): Promise<string> {
  const key = newKey()
  const first = await send({ 'idempotency-key': key })
  t.equal(first.statusCode, expectedStatus, 'created')
  t.equal(first.headers['idempotent-replayed'], undefined)
  const again = await send({ 'idempotency-key': key })
  t.equal(again.statusCode, expectedStatus, 'the retry has the same status')
  t.equal(again.headers['idempotent-replayed'], 'true', 'replayed')
  t.same(again.json(), first.json(), 'the same body')
  return first.json().data.id
}

async function adminToken (): Promise<string> {
  return await provider.sign({ sub: `moderator-${run}`, email: 'mod@example.test', roles: ['admin'] })
}

t.test('skills, experience, appeals, widget installations, admin motd and widgets, CV imports: one entry per key', async (t) => {
  const me = await signInPerson(s, 'creates')
  const token = await adminToken()
  const asAdmin = async (url: string, payload: object, headers: Record<string, string>) => await s.app.inject({ method: 'POST', url, payload, headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': uniqueClientIp(), ...headers } })

  const skill = `Skill ${run}`
  await twice(t, async (h) => await me.rest('POST', '/api/passport/skills', { name: skill, level: 3 }, h))
  t.equal(await count('passport_skills', 'name', skill), 1, 'one skill')

  const company = `Company ${run}`
  await twice(t, async (h) => await me.rest('POST', '/api/passport/experience', { title: 'Engineer', company, startDate: '2020-01' }, h))
  t.equal(await count('passport_experience', 'company', company), 1, 'one experience entry')

  const widgetName = `Clock ${run}`
  const widgetId = await twice(t, async (h) => await asAdmin('/api/admin/widgets', { name: widgetName, description: 'Tells the time', settingsSchema: { type: 'object', properties: { zone: { type: 'string', maxLength: 20 } } } }, h))
  t.equal(await count('widgets', 'name', widgetName), 1, 'one catalogue widget')

  const motdText = `Maintenance ${run}`
  const motd = { text: motdText, severity: 'info', startsAt: new Date().toISOString(), endsAt: new Date(Date.now() + 60_000).toISOString() }
  await twice(t, async (h) => await asAdmin('/api/admin/motd', motd, h))
  t.equal(await count('motd', 'text', motdText), 1, 'one message of the day')

  const room = (await me.rest('POST', '/api/rooms', { name: `Widgets ${run}`, isPublic: true })).json().data.id as string
  await twice(t, async (h) => await me.rest('POST', `/api/rooms/${room}/widgets`, { widgetId, settings: { zone: 'UTC' } }, h))
  t.equal(await count('room_widgets', 'room_id', room), 1, 'one installation')

  // An appeal needs an action against the caller: a warning from a resolved report.
  const reporter = await signInPerson(s, 'reporter')
  const reportId = (await reporter.rest('POST', '/api/reports', { targetType: 'room', targetId: room, reason: 'spam' })).json().data.id as string
  const resolved = await asAdmin(`/api/admin/reports/${reportId}/resolve`, { action: 'warn' }, {})
  t.equal(resolved.statusCode, 200, resolved.body)
  const actionId = resolved.json().data.action.id as string
  await twice(t, async (h) => await me.rest('POST', '/api/appeals', { actionId, text: 'It was a test.' }, h))
  t.equal(await count('appeals', 'action_id', actionId), 1, 'one appeal')

  // A CV import adds its experience entries each time it runs.
  const cv = Buffer.from(`Experience\nDeveloper at Import ${run} (01/2018 - 12/2019)\nSkills\nGo`)
  const key = newKey()
  const imports = []
  for (let i = 0; i < 2; i++) {
    const res = await fetch(`${s.url}/api/passport/import`, { method: 'POST', headers: { cookie: `app_session=${me.cookie}`, 'idempotency-key': key }, body: formOf({ filename: 'cv.txt', content: cv }) })
    imports.push({ status: res.status, replayed: res.headers.get('idempotent-replayed'), body: await res.text() })
  }
  t.same(imports.map((i) => i.status), [200, 200])
  t.same(imports.map((i) => i.replayed), [null, 'true'])
  t.equal(imports[1]?.body, imports[0]?.body)
  t.equal(await count('passport_experience', 'company', `Import ${run}`), 1, 'the CV\'s entry once')
})

t.test('RPC AddSkill and AddExperience take the key too', async (t) => {
  const me = await signInPerson(s, 'rpc-creates')
  for (const binary of [false, true]) {
    const client = me.rpc(PassportService, { binary })
    const key = newKey()
    const name = `Rpc skill ${key}`
    const first = await client.addSkill({ name }, { headers: { 'idempotency-key': key } })
    const again = await client.addSkill({ name }, { headers: { 'idempotency-key': key } })
    t.equal(again.skill?.id, first.skill?.id, 'the same skill')
    t.equal(await count('passport_skills', 'name', name), 1)
    t.equal((await rpcError(client.addSkill({ name: `${name}!` }, { headers: { 'idempotency-key': key } }))).code, Code.InvalidArgument, 'another request under the key')

    const company = `Rpc company ${key}`
    const e1 = await client.addExperience({ title: 'Dev', company, startDate: '2021-01' }, { headers: { 'idempotency-key': key + 'e' } })
    const e2 = await client.addExperience({ title: 'Dev', company, startDate: '2021-01' }, { headers: { 'idempotency-key': key + 'e' } })
    t.equal(e2.experience?.id, e1.experience?.id)
    t.equal(await count('passport_experience', 'company', company), 1)
  }
})

t.test('uploads: the whole file is the fingerprint', async (t) => {
  const me = await signInPerson(s, 'uploader')
  const client = uploadClient(s)
  const key = newKey()
  const fileA = pngOfSize(200 * 1024)
  const fileB = Buffer.from(fileA)
  fileB[fileB.length - 1] = 1 // the same length, one byte apart
  const send = async (content: Buffer, filename = 'a.png') => await client.post(me.cookie, formOf(['type', 'attachment'], { filename, content }), '/api/uploads', { 'idempotency-key': key })

  const first = await send(fileA)
  t.equal(first.status, 201)
  const id = String(first.json().data?.id)
  const other = await send(fileB)
  t.equal(other.status, 422, 'another file of the same length under the key')
  t.equal(other.json().error, 'IdempotencyKeyReused')
  t.equal((await send(fileA, 'b.png')).status, 422, 'the same bytes under another name')
  const same = await send(fileA)
  t.equal(same.status, 201, 'the same file again')
  t.equal(same.headers.get('idempotent-replayed'), 'true')
  t.equal(same.json().data?.id, id, 'the first upload')
  t.same(readFileSync(join(s.config.dataDir, 'uploads', id)), fileA, 'the first file is untouched')
  const rows = await s.app.deps.db.selectFrom('uploads').select('id').where('owner_id', '=', me.userId).execute()
  t.equal(rows.length, 1, 'one upload kept')
})

/**
 * A request written in two parts: the headers and `first` now, the rest when `finish` is called.
 * Resolves with the status, body and headers once answered.
 */
function slowRequest (path: string, headers: Record<string, string>, body: Buffer, first: number): { finish: () => void, answer: Promise<{ status: number, body: string, headers: http.IncomingHttpHeaders }> } {
  const url = new URL(s.url)
  const request = http.request({ host: url.hostname, port: url.port, path, method: 'POST', headers: { ...headers, 'content-length': String(body.length) } })
  const answer = new Promise<{ status: number, body: string, headers: http.IncomingHttpHeaders }>((resolve, reject) => {
    request.on('response', (response) => {
      let text = ''
      response.on('data', (chunk: Buffer) => { text += chunk.toString() })
      response.on('end', () => { resolve({ status: response.statusCode ?? 0, body: text, headers: response.headers }) })
    })
    request.on('error', reject)
  })
  request.flushHeaders()
  request.write(body.subarray(0, first))
  return { finish: () => { request.end(body.subarray(first)) }, answer }
}

async function roomsNamed (name: string): Promise<number> {
  const row = await s.app.deps.db.selectFrom('rooms').select((eb) => eb.fn.countAll<string>().as('n')).where('name', '=', name).executeTakeFirstOrThrow()
  return Number(row.n)
}

const json = (p: Person, key: string): Record<string, string> => ({ cookie: `app_session=${p.cookie}`, 'content-type': 'application/json', 'idempotency-key': key })
const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

t.test('a slow first request keeps its key: a retry arriving whole waits for it, or is told 409 with Retry-After', async (t) => {
  const me = await signInPerson(s, 'slow')

  await t.test('the first finishes within the wait: the retry gets its answer, one room', async (t) => {
    const key = newKey()
    const name = `Slow ${key}`
    const body = Buffer.from(JSON.stringify({ name }))
    const slow = slowRequest('/api/rooms', json(me, key), body, 5)
    await sleep(200) // its key is claimed as its headers arrive
    const retry = fetch(`${s.url}/api/rooms`, { method: 'POST', headers: json(me, key), body })
    await sleep(500)
    slow.finish()
    const [original, again] = await Promise.all([slow.answer, retry])
    t.equal(original.status, 201, 'the first request gets its own answer')
    t.equal(original.headers['idempotent-replayed'], undefined, 'not a replay')
    t.equal(again.status, 201)
    t.equal(again.headers.get('idempotent-replayed'), 'true', 'the retry waited and got it again')
    t.equal((await again.json()).data.id, JSON.parse(original.body).data.id)
    t.equal(await roomsNamed(name), 1, 'one execution')
  })

  await t.test('the first is still arriving after the wait: 409 with Retry-After, then its answer', async (t) => {
    const key = newKey()
    const name = `Slower ${key}`
    const body = Buffer.from(JSON.stringify({ name }))
    const slow = slowRequest('/api/rooms', json(me, key), body, 5)
    await sleep(200)
    const busy = await fetch(`${s.url}/api/rooms`, { method: 'POST', headers: json(me, key), body })
    t.equal(busy.status, 409)
    t.equal(busy.headers.get('retry-after'), '1')
    t.match(await busy.json(), { error: 'Conflict', retryAfter: 1 })
    const rpc = await rpcError(me.rpc(RoomsService).createRoom({ name }, { headers: { 'idempotency-key': key } }))
    t.equal(rpc.code, Code.Aborted, 'RPC: ABORTED')
    t.equal(rpc.metadata.get('retry-after'), '1', 'with Retry-After')
    t.equal(await roomsNamed(name), 0, 'nothing ran')
    slow.finish()
    const original = await slow.answer
    t.equal(original.status, 201)
    const later = await fetch(`${s.url}/api/rooms`, { method: 'POST', headers: json(me, key), body })
    t.equal(later.headers.get('idempotent-replayed'), 'true')
    t.equal(await roomsNamed(name), 1, 'one execution')
  })

  await t.test('a retry with another body is still 422 once the first is in', async (t) => {
    const key = newKey()
    const name = `Mismatch ${key}`
    const slow = slowRequest('/api/rooms', json(me, key), Buffer.from(JSON.stringify({ name })), 5)
    await sleep(200)
    const other = fetch(`${s.url}/api/rooms`, { method: 'POST', headers: json(me, key), body: JSON.stringify({ name: `${name}!` }) })
    await sleep(300)
    slow.finish()
    t.equal((await slow.answer).status, 201)
    const refused = await other
    t.equal(refused.status, 422)
    t.equal((await refused.json()).error, 'IdempotencyKeyReused')
    t.equal(await roomsNamed(`${name}!`), 0)
  })

  await t.test('a first request that never completes frees its key', async (t) => {
    const key = newKey()
    const name = `Dropped ${key}`
    const body = Buffer.from(JSON.stringify({ name }))
    const url = new URL(s.url)
    const dropped = http.request({ host: url.hostname, port: url.port, path: '/api/rooms', method: 'POST', headers: { ...json(me, key), 'content-length': String(body.length) } })
    dropped.on('error', () => {})
    dropped.flushHeaders()
    dropped.write(body.subarray(0, 5))
    await sleep(200)
    dropped.destroy()
    await sleep(300)
    const res = await fetch(`${s.url}/api/rooms`, { method: 'POST', headers: json(me, key), body })
    t.equal(res.status, 201, 'the retry runs')
    t.equal(res.headers.get('idempotent-replayed'), null)
    t.equal(await roomsNamed(name), 1)
  })
})

t.test('parallel retries arriving whole (the claim in the create\'s transaction): one room, one answer', async (t) => {
  const me = await signInPerson(s, 'parallel')
  const key = newKey()
  const name = `Parallel ${key}`
  const answers = await Promise.all(Array.from({ length: 20 }, async () => {
    const res = await fetch(`${s.url}/api/rooms`, { method: 'POST', headers: json(me, key), body: JSON.stringify({ name }) })
    return { status: res.status, replayed: res.headers.get('idempotent-replayed'), id: (await res.json()).data?.id as string | undefined }
  }))
  t.same(answers.map((a) => a.status), Array(20).fill(201), 'every retry got the answer')
  t.equal(new Set(answers.map((a) => a.id)).size, 1, 'one id')
  t.equal(answers.filter((a) => a.replayed === null).length, 1, 'one execution answered as such')
  t.equal(await roomsNamed(name), 1, 'one row')
})

t.test('a failure on our side frees the key: a retry runs again', async (t) => {
  const me = await signInPerson(s, 'failing')
  const key = newKey()
  const uploads = join(s.config.dataDir, 'uploads')
  const { renameSync } = await import('node:fs')
  renameSync(uploads, `${uploads}.away`)
  const failed = await uploadClient(s).post(me.cookie, formOf(['type', 'avatar'], { filename: 'a.png', content: SAMPLES.png }), '/api/uploads', { 'idempotency-key': key })
  renameSync(`${uploads}.away`, uploads)
  t.equal(failed.status, 503, 'storage failing')
  const retried = await uploadClient(s).post(me.cookie, formOf(['type', 'avatar'], { filename: 'a.png', content: SAMPLES.png }), '/api/uploads', { 'idempotency-key': key })
  t.equal(retried.status, 201, 'the retry ran')
  t.equal(retried.headers.get('idempotent-replayed'), null)
})
