// Presence (DECISIONS §17 "Presence"): who is on a room's canvas now. On one instance, over both
// transports: GET /api/canvas/presence and GetPresence list the present users with their display
// name, avatar, `since` and `lastActiveAt`, oldest first; POST /api/canvas/presence and
// ReportPresence make the caller present without a cursor (again: `lastActiveAt` moves); a cursor
// report makes them present too; `presence:joined` and `presence:left` reach the room's other members,
// never the user themself, the left exactly with `cursor:left`; a room the caller may not see is
// 404 / NOT_FOUND; a suspended user is never listed; 300 users present → 200 listed and the count of
// the rest. Across two instances (two apps on one PGlite, and on Postgres when DATABASE_URL is set):
// each sees the other join, both are listed on either instance, a third instance started later
// learns who is present from the others, and a user's last stream closing on one instance is
// `presence:left` on the other within a second.
import t, { type Test } from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import { Code } from '@connectrpc/connect'
import { openDatabase } from '../src/db/database.js'
import { CanvasService } from '../src/gen/app/canvas/v1/canvas_pb.js'
import { startApp, uniqueClientIp, uniqueEmail, type TestApp } from './helpers/app.js'
import { startOidcProvider } from './helpers/oidc-provider.js'
import { plain, rpcError, signInPerson, type Person } from './helpers/people.js'
import { rpcClient } from './helpers/sign-in.js'
import { ofType, openStream, sleep, type SseMessage, type SseStream } from './helpers/sse.js'
import { temporaryDir } from './helpers/temp-dirs.js'

const provider = await startOidcProvider()
t.teardown(provider.close)
const s = await startApp({ SSE_HEARTBEAT_MS: '1000', OIDC_ISSUER: provider.issuer, OIDC_AUDIENCE: provider.audience })
t.teardown(s.close)

interface Pair { a: TestApp, b: TestApp, third: () => Promise<TestApp> }

// Two apps on one embedded database (BuildOptions.database), and a third started later.
const embedded = await openDatabase({ databaseUrl: undefined, dataDir: temporaryDir('canvas-presence-') })
t.teardown(embedded.close)
const embeddedEnv = { DATABASE_URL: undefined, RATE_LIMIT_KEY_PREFIX: `test-${randomUUID()}:`, SSE_HEARTBEAT_MS: '1000' }
const pgliteA = await startApp(embeddedEnv, { database: embedded })
const pgliteB = await startApp(embeddedEnv, { database: embedded })
t.teardown(pgliteA.close)
t.teardown(pgliteB.close)

// Two apps on Postgres (and a third started later) when DATABASE_URL is set.
const postgresEnv = { RATE_LIMIT_KEY_PREFIX: `test-${randomUUID()}:`, SSE_HEARTBEAT_MS: '1000' }
const postgresPair = process.env.DATABASE_URL === undefined
  ? undefined
  : { a: await startApp(postgresEnv), b: await startApp(postgresEnv), third: async () => await startApp(postgresEnv) }
if (postgresPair !== undefined) {
  t.teardown(postgresPair.a.close)
  t.teardown(postgresPair.b.close)
}

interface PresentUser { userId: string, displayName: string, avatarUrl: string, since: string, lastActiveAt: string }
interface Presence { roomId: string, users: PresentUser[], total: number, more: number }

async function stream (t: Test, app: TestApp, person: Person): Promise<SseStream> {
  const opened = await openStream(app.url, { cookie: person.cookie, headers: { 'x-forwarded-for': uniqueClientIp() } })
  t.equal(opened.status, 200)
  t.teardown(() => { opened.close() })
  return opened
}

async function restPresence (app: TestApp, person: Person, roomId: string): Promise<Presence> {
  const res = await app.app.inject({ method: 'GET', url: `/api/canvas/presence?roomId=${encodeURIComponent(roomId)}`, cookies: { app_session: person.cookie } })
  if (res.statusCode !== 200) throw new Error(`GET presence: ${res.statusCode} ${res.body}`)
  return res.json().data as Presence
}

async function rpcPresence (app: TestApp, person: Person, roomId: string): Promise<Presence> {
  return plain(await rpcClient(app, CanvasService, { token: person.token }).getPresence({ roomId })) as Presence
}

async function report (app: TestApp, person: Person, roomId: string): Promise<void> {
  const res = await app.app.inject({ method: 'POST', url: '/api/canvas/presence', cookies: { app_session: person.cookie }, payload: { roomId } })
  if (res.statusCode !== 204) throw new Error(`POST presence: ${res.statusCode} ${res.body}`)
}

/** Polls `read` until `done` holds for what it returned (reports are relayed, so they land a moment later). */
async function until<T> (read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let value = await read()
  while (!done(value)) {
    if (Date.now() > deadline) throw new Error(`timed out; last: ${JSON.stringify(value).slice(0, 500)}`)
    await sleep(20)
    value = await read()
  }
  return value
}

const idsOf = (presence: Presence): string[] => presence.users.map((u) => u.userId)
const presenceOf = (userId: string) => (m: SseMessage): boolean => m.json.type?.startsWith('presence:') === true && m.json.payload?.userId === userId
const joinedOf = (userId: string) => (m: SseMessage): boolean => ofType('presence:joined')(m) && (m.json.payload?.user as { userId?: string } | undefined)?.userId === userId
const leftOf = (userId: string) => (m: SseMessage): boolean => ofType('presence:left')(m) && m.json.payload?.userId === userId

async function publicRoom (owner: Person, name = 'Presence'): Promise<string> {
  const res = await owner.rest('POST', '/api/rooms', { name, isPublic: true })
  if (res.statusCode !== 201) throw new Error(`create room: ${res.statusCode} ${res.body}`)
  return res.json().data.id as string
}

t.test('present users on both transports, oldest first; a repeat moves lastActiveAt; joins and leaves reach the others, never the user', async (t) => {
  const alice = await signInPerson(s, 'alice')
  const bob = await signInPerson(s, 'bob')
  const carol = await signInPerson(s, 'carol')
  const dave = await signInPerson(s, 'dave')
  t.equal((await bob.rest('PATCH', '/api/users/me', { displayName: 'Bob Presence' })).statusCode, 200)
  const roomId = await publicRoom(alice)
  const aliceStream = await stream(t, s, alice)
  const bobStream = await stream(t, s, bob)

  t.same(await restPresence(s, alice, roomId), { roomId, users: [], total: 0, more: 0 }, 'nobody yet')
  t.same(await rpcPresence(s, alice, roomId), { roomId, users: [], total: 0, more: 0 }, 'nobody yet (RPC)')

  await report(s, bob, roomId)
  const joined = await aliceStream.waitFor(joinedOf(bob.userId))
  t.same(Object.keys(joined.json).sort(), ['payload', 'timestamp', 'type', 'userId'])
  t.equal(joined.json.userId, bob.userId)
  t.equal(joined.id, undefined, 'ephemeral: no id')
  const joinedUser = joined.json.payload?.user as PresentUser
  t.same(joined.json.payload, { roomId, user: { userId: bob.userId, displayName: 'Bob Presence', avatarUrl: '', since: joinedUser.since, lastActiveAt: joinedUser.since } })
  t.ok(Number.isFinite(Date.parse(joinedUser.since)) && joinedUser.since.endsWith('Z'))

  // Carol through RPC, Dave by reporting a cursor: each is present too.
  t.same(plain(await carol.rpc(CanvasService).reportPresence({ roomId })), {})
  await aliceStream.waitFor(joinedOf(carol.userId))
  t.equal((await dave.rest('GET', `/api/canvas/state?roomId=${roomId}`)).statusCode, 200)
  t.equal((await dave.rest('POST', '/api/canvas/cursor', { roomId, x: 5, y: 6 })).statusCode, 204)
  await aliceStream.waitFor(joinedOf(dave.userId))
  await bobStream.waitFor(joinedOf(dave.userId))

  const listed = await restPresence(s, alice, roomId)
  t.same(idsOf(listed), [bob.userId, carol.userId, dave.userId], 'oldest first')
  t.same({ total: listed.total, more: listed.more }, { total: 3, more: 0 })
  t.same(listed.users[0], { userId: bob.userId, displayName: 'Bob Presence', avatarUrl: '', since: joinedUser.since, lastActiveAt: joinedUser.lastActiveAt })
  t.same(await rpcPresence(s, bob, roomId), listed, 'the same answer over RPC, to any member')

  // A repeat: still present, `since` kept, `lastActiveAt` later; no second join.
  await sleep(20)
  await report(s, bob, roomId)
  const refreshed = await until(async () => await restPresence(s, alice, roomId), (p) => p.users[0]?.lastActiveAt !== joinedUser.lastActiveAt)
  t.equal(refreshed.users[0]?.since, joinedUser.since)
  t.ok(Date.parse(refreshed.users[0]?.lastActiveAt ?? '') > Date.parse(joinedUser.lastActiveAt))
  t.same(idsOf(refreshed), [bob.userId, carol.userId, dave.userId])

  // Leaving: `presence:left` with `cursor:left`, to the others.
  t.equal((await bob.rest('POST', '/api/canvas/cursor/leave', { roomId })).statusCode, 204)
  const left = await aliceStream.waitFor(leftOf(bob.userId))
  t.same(left.json.payload, { roomId, userId: bob.userId })
  t.ok(aliceStream.events().some((m) => ofType('cursor:left')(m) && m.json.payload?.userId === bob.userId), 'cursor:left came with it')
  t.same(idsOf(await restPresence(s, alice, roomId)), [carol.userId, dave.userId])
  t.equal(aliceStream.events().filter(joinedOf(bob.userId)).length, 1, 'one join for Bob')

  // Bob's own stream: every join of the others, never his own join or leave (a later join is the marker).
  await report(s, alice, roomId)
  await bobStream.waitFor(joinedOf(alice.userId))
  t.same(bobStream.events().filter(presenceOf(bob.userId)).concat(bobStream.events().filter(joinedOf(bob.userId))), [], 'never his own')
  t.equal(aliceStream.events().filter(joinedOf(alice.userId)).length, 0, 'nor Alice hers')
})

t.test('a room the caller may not see: 404 / NOT_FOUND on both transports; bad input and no session refused', async (t) => {
  const owner = await signInPerson(s, 'private-owner')
  const stranger = await signInPerson(s, 'stranger')
  const privateRoom = (await owner.rest('POST', '/api/rooms', { name: 'Private', isPublic: false })).json().data.id as string
  await report(s, owner, privateRoom)
  await until(async () => await restPresence(s, owner, privateRoom), (p) => p.total === 1)

  for (const roomId of [privateRoom, 'room_does_not_exist']) {
    const read = await stranger.rest('GET', `/api/canvas/presence?roomId=${roomId}`)
    t.equal(read.statusCode, 404)
    t.same(read.json(), { error: 'NotFound', message: 'Room not found' })
    const wrote = await stranger.rest('POST', '/api/canvas/presence', { roomId })
    t.equal(wrote.statusCode, 404)
    t.same(wrote.json(), { error: 'NotFound', message: 'Room not found' })
    t.equal((await rpcError(stranger.rpc(CanvasService).getPresence({ roomId }))).code, Code.NotFound)
    t.equal((await rpcError(stranger.rpc(CanvasService, { binary: true }).reportPresence({ roomId }))).code, Code.NotFound)
  }
  t.same(idsOf(await restPresence(s, owner, privateRoom)), [owner.userId], 'the stranger was not made present')

  const missing = await stranger.rest('GET', '/api/canvas/presence')
  t.equal(missing.statusCode, 400)
  t.equal(missing.json().error, 'ValidationError')
  t.equal(missing.json().details[0].field, 'roomId')
  const extra = await stranger.rest('POST', '/api/canvas/presence', { roomId: privateRoom, x: 1 })
  t.equal(extra.statusCode, 400)
  const invalid = await rpcError(stranger.rpc(CanvasService).getPresence({ roomId: '' }))
  t.equal(invalid.code, Code.InvalidArgument)
  t.equal((await s.app.inject({ method: 'GET', url: `/api/canvas/presence?roomId=${privateRoom}` })).statusCode, 401)
  t.equal((await rpcError(rpcClient(s, CanvasService).reportPresence({ roomId: privateRoom }))).code, Code.Unauthenticated)
})

t.test('a suspended user is never listed to others', async (t) => {
  const owner = await signInPerson(s, 'suspension-owner')
  const offender = await signInPerson(s, 'offender')
  const roomId = await publicRoom(owner)
  await report(s, owner, roomId)
  await report(s, offender, roomId)
  await until(async () => await restPresence(s, owner, roomId), (p) => p.total === 2)

  const reported = await owner.rest('POST', '/api/reports', { targetType: 'user', targetId: offender.userId, reason: 'spam' })
  t.equal(reported.statusCode, 201, reported.body)
  const admin = await provider.sign({ sub: `presence-admin-${randomUUID()}`, roles: ['admin'] })
  const resolved = await s.app.inject({ method: 'POST', url: `/api/admin/reports/${reported.json().data.id as string}/resolve`, headers: { authorization: `Bearer ${admin}` }, payload: { action: 'suspend' } })
  t.equal(resolved.statusCode, 200, resolved.body)

  const after = await restPresence(s, owner, roomId)
  t.same(idsOf(after), [owner.userId], 'still present on the board (no stream closed), yet not listed')
  t.same({ total: after.total, more: after.more }, { total: 1, more: 0 }, 'nor counted')
  t.same(await rpcPresence(s, owner, roomId), after)
})

/** `count` users signed in through the core's own magic-link flow (faster than one by one over HTTP). */
async function manyUsers (app: TestApp, count: number): Promise<Array<{ userId: string, cookie: string }>> {
  const emails = Array.from({ length: count }, () => uniqueEmail('crowd'))
  for (let i = 0; i < count; i += 25) await Promise.all(emails.slice(i, i + 25).map(async (email) => await app.app.core.auth.requestLogin({ email }, { poll: false })))
  const tokenOf = new Map<string, string>()
  const outbox = join(app.config.dataDir, 'outbox')
  for (const file of readdirSync(outbox)) {
    const mail = JSON.parse(readFileSync(join(outbox, file), 'utf8')) as { to: string, text: string }
    const token = /token=([A-Za-z0-9_-]+)/.exec(mail.text)?.[1]
    if (token !== undefined) tokenOf.set(mail.to, token)
  }
  const users: Array<{ userId: string, cookie: string }> = []
  for (let i = 0; i < count; i += 25) {
    users.push(...await Promise.all(emails.slice(i, i + 25).map(async (email) => {
      const { user, sessionToken } = await app.app.core.auth.signInWithLink({ token: tokenOf.get(email) ?? '' })
      return { userId: user.id, cookie: sessionToken }
    })))
  }
  return users
}

t.test('300 users present in one room: the answer lists the 200 oldest and says how many more', async (t) => {
  const owner = await signInPerson(s, 'crowd-owner')
  const roomId = await publicRoom(owner, 'Crowded')
  const crowd = await manyUsers(s, 300)
  // One after another, so the order they became present in is known.
  for (const user of crowd) {
    const res = await s.app.inject({ method: 'POST', url: '/api/canvas/presence', cookies: { app_session: user.cookie }, headers: { 'x-forwarded-for': uniqueClientIp() }, payload: { roomId } })
    t.equal(res.statusCode, 204, res.body)
    if (res.statusCode !== 204) break
  }
  const answer = await until(async () => await restPresence(s, owner, roomId), (p) => p.total === 300)
  t.equal(answer.users.length, 200, 'at most 200 listed')
  t.same({ total: answer.total, more: answer.more }, { total: 300, more: 100 })
  t.same(idsOf(answer), crowd.slice(0, 200).map((u) => u.userId), 'the 200 who came first, oldest first')
  t.ok(answer.users.every((u, i) => i === 0 || Date.parse(u.since) >= Date.parse(answer.users[i - 1]?.since ?? '')), 'since never decreases')
  t.ok(Buffer.byteLength(JSON.stringify(answer)) < 64 * 1024, 'the answer stays small')
  const overRpc = await rpcPresence(s, owner, roomId)
  t.same(overRpc, answer, 'the same over RPC')
})

function clusterTests (label: string, pair: () => Pair): void {
  t.test(`${label}: each sees the other join; both listed on either instance; a new instance learns it from the others; a last stream closing is presence:left on the other`, async (t) => {
    const { a, b, third } = pair()
    const alice = await signInPerson(a, 'cluster-alice')
    const bob = await signInPerson(b, 'cluster-bob')
    const roomId = await publicRoom(alice, 'Cluster presence')
    const aliceOnA = await stream(t, a, alice)
    const bobOnB = await stream(t, b, bob)

    await report(a, alice, roomId)
    t.same(plain(await rpcClient(b, CanvasService, { token: bob.token }).reportPresence({ roomId })), {}, 'Bob reports through instance 2 (RPC)')
    const bobJoined = await aliceOnA.waitFor(joinedOf(bob.userId))
    t.match(bobJoined.json.payload, { roomId, user: { userId: bob.userId, displayName: String, avatarUrl: '', since: String, lastActiveAt: String } })
    await bobOnB.waitFor(joinedOf(alice.userId))

    const onA = await until(async () => await restPresence(a, alice, roomId), (p) => p.total === 2)
    const onB = await until(async () => await rpcPresence(b, bob, roomId), (p) => p.total === 2)
    t.same(idsOf(onA), [alice.userId, bob.userId], 'instance 1 lists both, oldest first')
    t.same(idsOf(onB), [alice.userId, bob.userId], 'instance 2 too')

    // An instance that starts later holds nothing of its own: the others answer its question.
    const beforeC = Date.now()
    const c = await third()
    t.teardown(c.close)
    const onC = await until(async () => await restPresence(c, alice, roomId), (p) => p.total === 2, 1_000)
    t.same(idsOf(onC), [alice.userId, bob.userId], 'the new instance lists both within a second of starting')
    // Times as the others hold them (every instance on the channel answers; the file's other app
    // too, on Postgres), all from before the new instance started: not when it heard of them.
    for (const u of onC.users) {
      t.ok(Date.parse(u.since) <= Date.parse(u.lastActiveAt) && Date.parse(u.lastActiveAt) < beforeC, `since and lastActiveAt from before the new instance started (${u.since}, ${u.lastActiveAt})`)
    }

    // Bob's last stream (on instance 2) closes: Alice on instance 1 is told within a second.
    const closedAt = Date.now()
    bobOnB.close()
    const left = await aliceOnA.waitFor(leftOf(bob.userId), 1_000)
    t.same(left.json.payload, { roomId, userId: bob.userId })
    t.ok(Date.now() - closedAt < 1_000, `presence:left after ${Date.now() - closedAt} ms`)
    for (const app of [a, b, c]) t.same(idsOf(await until(async () => await restPresence(app, alice, roomId), (p) => p.total === 1)), [alice.userId])
    t.equal(aliceOnA.events().filter(joinedOf(bob.userId)).length, 1, 'one join, one leave')
    t.equal(aliceOnA.events().filter(leftOf(bob.userId)).length, 1)
  })
}

clusterTests('two instances on one PGlite', () => ({ a: pgliteA, b: pgliteB, third: async () => await startApp(embeddedEnv, { database: embedded }) }))

if (postgresPair === undefined) {
  t.comment('two instances on Postgres: skipped, DATABASE_URL is not set (the PGlite pair above runs the same tests)')
} else {
  const pair = postgresPair
  clusterTests('two instances on one Postgres', () => pair)
}
