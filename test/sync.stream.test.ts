// The event stream over real HTTP: headers and heartbeats, who receives which room/spark/canvas
// event (the actor's other device, a member, never an outsider), RPC writes on the REST stream,
// visibility at delivery time, rolled-back writes, stream caps, and streams ending with their session.
import t, { type Test } from 'tap'
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { Code } from '@connectrpc/connect'
import { RoomsService } from '../src/gen/app/rooms/v1/rooms_pb.js'
import { AuthService } from '../src/gen/app/auth/v1/auth_pb.js'
import { SparksService } from '../src/gen/app/sparks/v1/sparks_pb.js'
import { insertEvents } from '../src/core/event-log.repository.js'
import { lastMailTo, movableClock, startApp, uniqueClientIp } from './helpers/app.js'
import { rpcError, signInPerson, type Person } from './helpers/people.js'
import { rpcClient, signInWithRpc } from './helpers/sign-in.js'
import { ofType, openStream, positionsIncrease, sleep, type SseMessage, type SseStream } from './helpers/sse.js'

const clock = movableClock()
const s = await startApp({ SSE_HEARTBEAT_MS: '200' }, { clock })
t.teardown(s.close)
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

/** Streams opened by a test are closed when it ends. */
async function stream (t: Test, options: Parameters<typeof openStream>[1]): Promise<SseStream> {
  const opened = await openStream(s.url, { ...options, headers: { 'x-forwarded-for': uniqueClientIp(), ...options?.headers } })
  t.teardown(() => { opened.close() })
  return opened
}

async function publicRoomWithMember (owner: Person, member: Person): Promise<string> {
  const room = (await owner.rest('POST', '/api/rooms', { name: 'Shared', isPublic: true })).json().data.id as string
  // Opening the canvas makes a signed-in user a member (DECISIONS §5).
  t.equal((await member.rest('GET', `/api/canvas/state?roomId=${room}`)).statusCode, 200)
  return room
}

/** Proves nothing matching arrived: waits for a later event on the same stream (delivery is in log order). */
async function noneBefore (t: Test, on: SseStream, marker: (m: SseMessage) => boolean, unwanted: (m: SseMessage) => boolean, what: string): Promise<void> {
  const seen = await on.waitFor(marker)
  const index = on.messages.indexOf(seen)
  t.equal(on.messages.slice(0, index).filter(unwanted).length, 0, what)
}

t.test('headers arrive at once with CORS for the configured origin, then named heartbeats', async (t) => {
  const owner = await signInPerson(s, 'headers')
  const started = Date.now()
  const opened = await stream(t, { cookie: owner.cookie, headers: { origin: s.config.corsOrigin } })
  t.ok(Date.now() - started < 1_000, 'the response headers did not wait for a first event')
  t.equal(opened.status, 200)
  t.equal(opened.headers.get('content-type'), 'text/event-stream')
  t.equal(opened.headers.get('cache-control'), 'no-cache, no-transform')
  t.equal(opened.headers.get('connection'), 'keep-alive')
  t.equal(opened.headers.get('x-accel-buffering'), 'no')
  t.equal(opened.headers.get('access-control-allow-origin'), s.config.corsOrigin)
  t.equal(opened.headers.get('access-control-allow-credentials'), 'true')

  const first = await opened.waitFor((m) => m.event === 'heartbeat')
  const second = await opened.waitFor((m) => m.event === 'heartbeat' && m !== first)
  for (const beat of [first, second]) {
    t.same(Object.keys(beat.json), ['timestamp'], 'heartbeat data is { timestamp }')
    t.match(beat.json.timestamp, ISO_MS)
    t.equal(beat.id, undefined, 'heartbeats carry no id')
  }

  const bearer = await stream(t, { bearer: owner.token })
  t.equal(bearer.status, 200, 'the desktop client may send its Bearer token instead')
  await bearer.waitFor((m) => m.event === 'heartbeat')

  const anonymous = await stream(t, {})
  t.equal(anonymous.status, 401)
  t.equal(anonymous.headers.get('content-type')?.startsWith('application/json'), true)
  const forged = await stream(t, { cookie: 'not-a-jwt' })
  t.equal(forged.status, 401)
})

t.test('room, spark and canvas events reach the actor’s other device and a member, never an outsider', async (t) => {
  const owner = await signInPerson(s, 'owner')
  const member = await signInPerson(s, 'member')
  const outsider = await signInPerson(s, 'outsider')
  const ownerBrowser = await stream(t, { cookie: owner.cookie })
  const ownerDesktop = await stream(t, { bearer: owner.token })
  const memberStream = await stream(t, { cookie: member.cookie })
  const outsiderStream = await stream(t, { cookie: outsider.cookie })

  const created = (await owner.rest('POST', '/api/rooms', { name: 'Events', isPublic: true })).json().data
  const roomId = created.id as string
  for (const device of [ownerBrowser, ownerDesktop]) {
    const message = await device.waitFor(ofType('room:created'))
    t.same(message.json, { type: 'room:created', payload: created, timestamp: message.json.timestamp, userId: owner.userId }, 'the SPEC envelope, nothing more')
    t.match(message.json.timestamp, ISO_MS)
    t.match(message.id, /^\d+-\d+$/, 'every event carries an id (a log position)')
  }
  t.equal((await member.rest('GET', `/api/canvas/state?roomId=${roomId}`)).statusCode, 200, 'the member opens the canvas')

  const writes: Array<[string, () => Promise<unknown>]> = []
  let sparkId = ''
  writes.push(['room:updated', async () => await owner.rest('PATCH', `/api/rooms/${roomId}`, { name: 'Events, renamed' })])
  writes.push(['spark:created', async () => {
    const res = await owner.rest('POST', '/api/sparks', { title: 'Idea', content: 'text', roomId, x: 0, y: 0 })
    sparkId = res.json().data.id
  }])
  writes.push(['spark:updated', async () => await owner.rest('PATCH', `/api/sparks/${sparkId}`, { title: 'Better idea' })])
  writes.push(['position:updated', async () => await owner.rest('PATCH', '/api/canvas/position', { tileId: sparkId, x: 41, y: 19 })])
  writes.push(['positions:batch-updated', async () => await owner.rest('PATCH', '/api/canvas/positions/batch', { updates: [{ tileId: sparkId, x: 200, y: 200 }] })])
  writes.push(['layout:computed', async () => await owner.rest('POST', '/api/canvas/layout/compute', { roomId, algorithm: 'force-directed' })])
  writes.push(['layout:validated', async () => await owner.rest('POST', '/api/canvas/layout/validate', { roomId })])
  writes.push(['spark:deleted', async () => await owner.rest('DELETE', `/api/sparks/${sparkId}`)])
  writes.push(['room:deleted', async () => await owner.rest('DELETE', `/api/rooms/${roomId}`)])

  for (const [type, write] of writes) {
    const response = await write() as { statusCode?: number } | undefined
    if (response?.statusCode !== undefined) t.ok(response.statusCode < 300, `${type}: the write succeeded (${response.statusCode})`)
    const received = await Promise.all([ownerBrowser, ownerDesktop, memberStream].map(async (on) => await on.waitFor(ofType(type))))
    t.ok(received.every((m) => m.id === received[0]?.id && m.json.userId === owner.userId), `${type} reached both of the owner’s devices and the member, same id`)
  }
  t.same((await ownerBrowser.waitFor(ofType('room:deleted'))).json.payload, { id: roomId })
  t.same((await ownerBrowser.waitFor(ofType('spark:deleted'))).json.payload, { id: sparkId, roomId, version: 5 }, 'created, edited, moved, batched, laid out: deleted at version 5')

  t.ok(positionsIncrease(ownerBrowser), 'ids increase along the stream')
  t.notOk(ownerBrowser.events().some((m) => 'audience' in m.json), 'the internal audience never leaves the server')

  // The outsider's own room is a marker: everything published before it would have arrived first.
  await outsider.rest('POST', '/api/rooms', { name: 'Mine', isPublic: false })
  await noneBefore(t, outsiderStream, (m) => ofType('room:created')(m) && m.json.payload?.name === 'Mine', (m) => m.event === 'message', 'the outsider received none of the room’s events')
})

t.test('an RPC write arrives on the REST stream', async (t) => {
  const owner = await signInPerson(s, 'rpc-owner')
  const member = await signInPerson(s, 'rpc-member')
  const roomId = await publicRoomWithMember(owner, member)
  const memberStream = await stream(t, { cookie: member.cookie })
  const ownerBrowser = await stream(t, { cookie: owner.cookie })
  const { spark } = await owner.rpc(SparksService, { binary: true }).createSpark({ title: 'From the desktop', content: '', roomId, x: 10, y: 20 })
  for (const on of [memberStream, ownerBrowser]) {
    const message = await on.waitFor(ofType('spark:created'))
    t.equal(message.json.payload?.id, spark?.id)
    t.equal(message.json.payload?.title, 'From the desktop')
  }
})

t.test('visibility is decided at delivery: a room turned private stops reaching the former member at once', async (t) => {
  const owner = await signInPerson(s, 'private-owner')
  const member = await signInPerson(s, 'private-member')
  const roomId = await publicRoomWithMember(owner, member)
  const memberStream = await stream(t, { cookie: member.cookie })
  const ownerStream = await stream(t, { cookie: owner.cookie })
  await owner.rest('POST', '/api/sparks', { title: 'public', content: '', roomId, x: 0, y: 0 })
  await memberStream.waitFor(ofType('spark:created'))

  t.equal((await owner.rest('PATCH', `/api/rooms/${roomId}`, { isPublic: false })).statusCode, 200)
  await owner.rest('POST', '/api/sparks', { title: 'secret', content: '', roomId, x: 400, y: 0 })
  await ownerStream.waitFor((m) => ofType('spark:created')(m) && m.json.payload?.title === 'secret')
  // A marker the member does see: their own new room.
  await member.rest('POST', '/api/rooms', { name: 'marker', isPublic: false })
  await noneBefore(t, memberStream, (m) => ofType('room:created')(m) && m.json.payload?.name === 'marker',
    (m) => m.json.payload?.title === 'secret' || (ofType('room:updated')(m) && m.json.payload?.isPublic === false), 'nothing after the room turned private')
})

t.test('nothing is delivered for a rolled-back write', async (t) => {
  const owner = await signInPerson(s, 'rollback')
  const ownerStream = await stream(t, { cookie: owner.cookie })
  const roomId = (await owner.rest('POST', '/api/rooms', { name: 'Atomic', isPublic: true })).json().data.id as string
  const spark = (await owner.rest('POST', '/api/sparks', { title: 'a', content: '', roomId, x: 0, y: 0 })).json().data
  const refused = await owner.rest('PATCH', '/api/canvas/positions/batch', { updates: [{ tileId: spark.id, x: 500, y: 500 }, { tileId: 'spark_missing', x: 0, y: 0 }] })
  t.equal(refused.statusCode, 404, 'the batch fails as a whole')

  // An event written inside a transaction that rolls back is never delivered.
  await t.rejects(s.app.deps.db.transaction().execute(async (trx) => {
    await insertEvents(trx, [{ type: 'room:updated', payload: { id: roomId, name: 'rolled back' }, audience: { kind: 'users', userIds: [owner.userId] }, userId: owner.userId }])
    throw new Error('roll back')
  }), { message: 'roll back' })

  await owner.rest('PATCH', `/api/rooms/${roomId}`, { name: 'after' })
  await noneBefore(t, ownerStream, (m) => ofType('room:updated')(m) && m.json.payload?.name === 'after',
    (m) => ofType('positions:batch-updated')(m) || m.json.payload?.name === 'rolled back', 'neither the failed batch nor the rolled-back append was delivered')
  t.same((await s.app.inject({ method: 'GET', url: `/api/sparks/${spark.id as string}`, cookies: { app_session: owner.cookie } })).json().data.x, 0)
  const logged = await sql<{ n: number }>`select count(*)::int as n from event_log where payload->>'name' = 'rolled back' and payload->>'id' = ${roomId}`.execute(s.app.deps.db)
  t.equal(logged.rows[0]?.n, 0, 'and nothing of it is in the log')
})

t.test('an event that cannot be written rolls its change back (the outbox is the change\'s own transaction)', async (t) => {
  const owner = await signInPerson(s, 'outbox')
  const ownerStream = await stream(t, { cookie: owner.cookie })
  const poison = `poison-${randomUUID().slice(0, 8)}`
  const trigger = `refuse_${poison.replaceAll('-', '_')}`
  // The event log refuses exactly this room's event, as a full disk or a broken constraint would.
  await sql.raw(`create function ${trigger}() returns trigger language plpgsql as $$
    begin
      if new.payload->>'name' = '${poison}' then raise exception 'event log refused'; end if;
      return new;
    end $$`).execute(s.app.deps.db)
  await sql.raw(`create trigger ${trigger} before insert on event_log for each row execute function ${trigger}()`).execute(s.app.deps.db)
  t.teardown(async () => {
    await sql.raw(`drop trigger ${trigger} on event_log`).execute(s.app.deps.db)
    await sql.raw(`drop function ${trigger}()`).execute(s.app.deps.db)
  })

  const rest = await owner.rest('POST', '/api/rooms', { name: poison, isPublic: false })
  t.equal(rest.statusCode, 500)
  t.same(rest.json(), { error: 'InternalServerError', message: 'An unexpected error occurred.', requestId: rest.headers['x-request-id'] })
  const rpc = await rpcError(owner.rpc(RoomsService).createRoom({ name: poison }))
  t.equal(rpc.code, Code.Internal)
  const rooms = (await owner.rest('GET', '/api/rooms?limit=100')).json().data as Array<{ name: string }>
  t.notOk(rooms.some((r) => r.name === poison), 'the room was not created: its change rolled back with its event')

  await owner.rest('POST', '/api/rooms', { name: 'after the refusal', isPublic: false })
  await noneBefore(t, ownerStream, (m) => m.json.payload?.name === 'after the refusal', (m) => m.json.payload?.name === poison, 'and no event of it was delivered')
})

t.test('positions order by number, not text: ids crossing a power of ten arrive in order, once', async (t) => {
  // Its own database: the ids of the shared log jump here.
  const own = await startApp({ DATABASE_URL: undefined })
  t.teardown(own.close)
  const owner = await signInPerson(own, 'digits')
  const opened = await openStream(own.url, { cookie: owner.cookie, headers: { 'x-forwarded-for': uniqueClientIp() } })
  t.teardown(() => { opened.close() })
  await sql`alter table event_log alter column id restart with 99999998`.execute(own.app.deps.db)
  await own.app.deps.db.transaction().execute(async (trx) => {
    await insertEvents(trx, ['nine', 'ten', 'eleven'].map((name) => ({ type: 'room:updated', payload: { name }, audience: { kind: 'users', userIds: [owner.userId] }, userId: owner.userId })))
  })
  own.app.live.bus.committed()
  await owner.rest('POST', '/api/rooms', { name: 'after the digits', isPublic: false })
  await opened.waitFor((m) => m.json.payload?.name === 'after the digits')
  t.same(opened.events().map((m) => m.json.payload?.name), ['nine', 'ten', 'eleven', 'after the digits'])
  t.ok(positionsIncrease(opened))
})

t.test('stream caps: the 6th stream of a user and the 21st of an address get 429; slots free on close', async (t) => {
  const user = await signInPerson(s, 'capped')
  const ip = uniqueClientIp()
  const five = await Promise.all(Array.from({ length: 5 }, async () => await stream(t, { cookie: user.cookie, headers: { 'x-forwarded-for': ip } })))
  t.ok(five.every((o) => o.status === 200), 'five streams open')
  const sixth = await stream(t, { cookie: user.cookie })
  t.equal(sixth.status, 429, 'the 6th is refused, whatever its address')
  t.equal(sixth.headers.get('retry-after'), '5')
  const body = await (await fetch(`${s.url}/api/sync/subscribe`, { headers: { cookie: `app_session=${user.cookie}` } })).json() as Record<string, unknown>
  t.same(Object.keys(body).sort(), ['error', 'message', 'retryAfter'])
  t.equal(body.error, 'Rate limit exceeded')
  t.equal(body.retryAfter, 5)
  t.match(body.message, /5 seconds/)

  five[0]?.close()
  await five[0]?.ended
  const freed = await waitForStatus(t, { cookie: user.cookie }, 200)
  t.equal(freed.status, 200, 'closing one frees its slot at once')

  // Per address: 20 streams from four users at one address; a fifth user is refused there, not elsewhere.
  const shared = uniqueClientIp()
  const people = await Promise.all(Array.from({ length: 5 }, async (_, i) => await signInPerson(s, `ip-${i}`)))
  for (const person of people.slice(0, 4)) {
    for (let i = 0; i < 5; i++) t.equal((await stream(t, { cookie: person.cookie, headers: { 'x-forwarded-for': shared } })).status, 200)
  }
  const twentyFirst = await stream(t, { cookie: people[4]?.cookie, headers: { 'x-forwarded-for': shared } })
  t.equal(twentyFirst.status, 429, 'the 21st from one address is refused')
  t.match(await (await fetch(`${s.url}/api/sync/subscribe`, { headers: { cookie: `app_session=${people[4]?.cookie ?? ''}`, 'x-forwarded-for': shared } })).json(), { error: 'Rate limit exceeded', message: /address/ })
  t.equal((await stream(t, { cookie: people[4]?.cookie })).status, 200, 'the same user from another address is fine')
})

for (const header of ['x-real-ip', 'cf-connecting-ip']) {
  t.test(`stream caps behind a proxy that sends ${header}: each client counts at its own address`, async (t) => {
    // The proxy (this test's loopback peer, trusted) names each client in the header and sends no X-Forwarded-For.
    const behindProxy = async (person: Person, address: string): Promise<SseStream> => {
      const opened = await openStream(s.url, { cookie: person.cookie, headers: { [header]: address } })
      t.teardown(() => { opened.close() })
      return opened
    }
    const people = await Promise.all(Array.from({ length: 5 }, async (_, i) => await signInPerson(s, `proxied-${i}`)))
    let opened = 0
    for (const person of people) {
      for (let i = 0; i < 5; i++) if ((await behindProxy(person, uniqueClientIp())).status === 200) opened++
    }
    t.equal(opened, 25, '25 streams of 25 clients behind one proxy: not capped as one address')
    const shared = uniqueClientIp()
    // Users who hold no stream yet (each of the five above is at its own cap of 5).
    const more = await Promise.all(Array.from({ length: 5 }, async (_, i) => await signInPerson(s, `shared-${i}`)))
    for (const person of more.slice(0, 4)) {
      for (let i = 0; i < 5; i++) t.equal((await behindProxy(person, shared)).status, 200)
    }
    t.equal((await behindProxy(more[4] as Person, shared)).status, 429, 'the 21st stream of one client address is refused')
  })
}

t.test('HEAD answers the stream\'s headers at once, opens no stream and holds no slot', async (t) => {
  const user = await signInPerson(s, 'head')
  const head = async (): Promise<Response> => await fetch(`${s.url}/api/sync/subscribe`, { method: 'HEAD', headers: { cookie: `app_session=${user.cookie}`, 'x-forwarded-for': uniqueClientIp() }, signal: AbortSignal.timeout(2_000) })
  for (let i = 0; i < 6; i++) {
    const res = await head()
    t.equal(res.status, 200)
    t.equal(res.headers.get('content-type'), 'text/event-stream')
  }
  t.equal((await fetch(`${s.url}/api/sync/subscribe`, { method: 'HEAD' })).status, 401, 'signed out: 401, as GET')
  const five = await Promise.all(Array.from({ length: 5 }, async () => await stream(t, { cookie: user.cookie })))
  t.ok(five.every((o) => o.status === 200), 'after six HEADs, all five stream slots are still free')
})

/** Streams close asynchronously on the server: retry briefly until the expected status. */
async function waitForStatus (t: Test, options: Parameters<typeof openStream>[1], status: number): Promise<SseStream> {
  for (let attempt = 0; ; attempt++) {
    const opened = await stream(t, options)
    if (opened.status === status || attempt === 20) return opened
    opened.close()
    await sleep(25)
  }
}

t.test('logout ends that session’s streams (only those); reconnecting gets 401', async (t) => {
  const user = await signInPerson(s, 'logout')
  const browser = await stream(t, { cookie: user.cookie })
  const desktop = await stream(t, { bearer: user.token })
  const started = Date.now()
  t.equal((await user.rest('POST', '/api/auth/logout')).statusCode, 204)
  await browser.ended
  t.ok(Date.now() - started < 2_000, 'the stream ended promptly')
  t.equal((await stream(t, { cookie: user.cookie })).status, 401, 'reconnecting is refused')
  await desktop.waitFor((m) => m.event === 'heartbeat' && desktop.messages.indexOf(m) > 1)
  t.equal((await stream(t, { bearer: user.token })).status, 200, 'the RPC session still streams')
})

t.test('a refresh token presented twice revokes its session: the session’s streams end', async (t) => {
  const session = await signInWithRpc(s)
  const desktop = await stream(t, { bearer: session.accessToken })
  t.equal(desktop.status, 200)
  const auth = rpcClient(s, AuthService, { clientIp: uniqueClientIp() })
  await auth.refreshToken({ refreshToken: session.refreshToken })
  await rpcError(auth.refreshToken({ refreshToken: session.refreshToken }))
  await desktop.ended
  t.equal((await stream(t, { bearer: session.accessToken })).status, 401)
})

t.test('account deletion ends every stream of the account', async (t) => {
  const user = await signInPerson(s, 'deleted')
  const browser = await stream(t, { cookie: user.cookie })
  const desktop = await stream(t, { bearer: user.token })
  t.equal((await user.rest('POST', '/api/auth/request-deletion')).statusCode, 200)
  const { token } = lastMailTo(s.config, user.email)
  t.equal((await s.app.inject({ method: 'POST', url: '/api/auth/confirm-deletion', payload: { token } })).statusCode, 204)
  await Promise.all([browser.ended, desktop.ended])
  t.equal((await stream(t, { cookie: user.cookie })).status, 401)
  t.equal((await stream(t, { bearer: user.token })).status, 401)
})

t.test('account deletion tells the others: room:deleted for its public rooms, spark:deleted for its sparks elsewhere', async (t) => {
  const leaving = await signInPerson(s, 'leaving')
  const staying = await signInPerson(s, 'staying')
  const outsider = await signInPerson(s, 'outsider')
  const theirRoom = await publicRoomWithMember(leaving, staying)
  const privateRoom = (await leaving.rest('POST', '/api/rooms', { name: 'Own', isPublic: false })).json().data.id as string
  const ownRoom = await publicRoomWithMember(staying, leaving)
  const sparkId = (await leaving.rest('POST', '/api/sparks', { roomId: ownRoom, title: 'Mine', x: 0, y: 0 })).json().data.id as string
  const stayingStream = await stream(t, { cookie: staying.cookie })
  const outsiderStream = await stream(t, { cookie: outsider.cookie })

  t.equal((await leaving.rest('POST', '/api/auth/request-deletion')).statusCode, 200)
  const { token } = lastMailTo(s.config, leaving.email)
  t.equal((await s.app.inject({ method: 'POST', url: '/api/auth/confirm-deletion', payload: { token } })).statusCode, 204)

  const roomDeleted = await stayingStream.waitFor(ofType('room:deleted'))
  t.same(roomDeleted.json.payload, { id: theirRoom })
  const sparkDeleted = await stayingStream.waitFor(ofType('spark:deleted'))
  t.same(sparkDeleted.json.payload, { id: sparkId, roomId: ownRoom, version: 1 })
  t.equal((await staying.rest('GET', `/api/rooms/${theirRoom}`)).statusCode, 404)
  t.equal((await staying.rest('GET', `/api/sparks/${sparkId}`)).statusCode, 404)
  t.notOk(stayingStream.messages.some((m) => m.json?.payload?.id === privateRoom), 'nothing about the private room')

  // The outsider saw none of it: a later event of their own proves it.
  await outsider.rest('POST', '/api/rooms', { name: 'Marker', isPublic: false })
  await noneBefore(t, outsiderStream, ofType('room:created'), (m) => m.json?.type === 'room:deleted' || m.json?.type === 'spark:deleted', 'the outsider got no deletion events')
})

// These two move the app's clock, so they come last.
t.test('a session revoked without a signal (one lost in transit) is caught by the heartbeat session check', async (t) => {
  const user = await signInPerson(s, 'silent-revoke')
  const browser = await stream(t, { cookie: user.cookie })
  await browser.waitFor((m) => m.event === 'heartbeat')
  const sessionId = (JSON.parse(Buffer.from(user.cookie.split('.')[1] ?? '', 'base64url').toString()) as { sid: string }).sid
  await sql`update sessions set revoked_at = now() where id = ${sessionId}`.execute(s.app.deps.db)
  const endedWithin = async (ms: number): Promise<boolean> => await Promise.race([browser.ended.then(() => true), sleep(ms).then(() => false)])
  t.notOk(await endedWithin(500), 'no signal was sent: the stream is still open')
  clock.advance(11_000) // the check runs at most every 10 s (of the app's clock), on a heartbeat
  t.ok(await endedWithin(2_000), 'the next check ended it')
})

t.test('a stream ends when its credential expires; reconnecting gets 401', async (t) => {
  const user = await signInPerson(s, 'expiring')
  const desktop = await stream(t, { bearer: user.token })
  const browser = await stream(t, { cookie: user.cookie })
  await desktop.waitFor((m) => m.event === 'heartbeat')
  clock.advance(15 * 60_000 + 1_000) // past the 15-minute access token
  await desktop.ended
  const refused = await stream(t, { bearer: user.token })
  t.equal(refused.status, 401)
  t.match(await (await fetch(`${s.url}/api/sync/subscribe`, { headers: { authorization: `Bearer ${user.token}` } })).json(), { error: 'Session expired' })
  const beat = browser.messages.length
  await browser.waitFor((m) => m.event === 'heartbeat' && browser.messages.indexOf(m) >= beat)
  t.pass('the 30-day cookie session keeps streaming')
})
