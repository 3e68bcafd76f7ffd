// Cursors over real HTTP streams (DECISIONS §7): reports coalesced to at most one message per room
// per ~100 ms with each user's newest position, never echoed to their own user, only to the room's
// members; `cursor:left` on leave and when the last stream of an active user closes; nothing stored.
import t, { type Test } from 'tap'
import { sql } from 'kysely'
import { startApp, uniqueClientIp } from './helpers/app.js'
import { signInPerson, type Person } from './helpers/people.js'
import { ofType, openStream, sleep, type SseStream } from './helpers/sse.js'

const s = await startApp({ SSE_HEARTBEAT_MS: '1000' })
t.teardown(s.close)

async function stream (t: Test, person: Person, device: 'browser' | 'desktop' = 'browser'): Promise<SseStream> {
  const opened = await openStream(s.url, { ...(device === 'browser' ? { cookie: person.cookie } : { bearer: person.token }), headers: { 'x-forwarded-for': uniqueClientIp() } })
  t.equal(opened.status, 200)
  t.teardown(() => { opened.close() })
  return opened
}

async function roomWith (owner: Person, ...members: Person[]): Promise<string> {
  const roomId = (await owner.rest('POST', '/api/rooms', { name: 'Cursors', isPublic: true })).json().data.id as string
  for (const member of members) t.equal((await member.rest('GET', `/api/canvas/state?roomId=${roomId}`)).statusCode, 200)
  return roomId
}

const batches = (on: SseStream, roomId: string): Array<{ at: number, cursors: Array<Record<string, unknown>> }> =>
  on.events().filter((m) => m.json.type === 'cursors:batch-updated' && (m.json.payload?.cursors as Array<{ roomId: string }>)[0]?.roomId === roomId)
    .map((m) => ({ at: (m as unknown as { at: number }).at, cursors: m.json.payload?.cursors as Array<Record<string, unknown>> }))

/** Records when each message arrived (the parser keeps order, not time). */
function timed (on: SseStream): void {
  const push = on.messages.push.bind(on.messages)
  on.messages.push = (...items) => push(...items.map((m) => Object.assign(m, { at: Date.now() })))
}

t.test('positions are coalesced per room, newest per user, never echoed to their own user, only to members', async (t) => {
  const alice = await signInPerson(s, 'alice')
  const bob = await signInPerson(s, 'bob')
  const carol = await signInPerson(s, 'carol')
  const dave = await signInPerson(s, 'dave')
  const roomId = await roomWith(alice, bob, carol)
  const aliceBrowser = await stream(t, alice)
  const aliceDesktop = await stream(t, alice, 'desktop')
  const bobStream = await stream(t, bob)
  const carolStream = await stream(t, carol)
  const daveStream = await stream(t, dave)
  timed(carolStream)

  // Alice moves every ~10 ms for about 600 ms; Bob moves twice.
  const moves: Array<Promise<unknown>> = []
  for (let i = 1; i <= 60; i++) {
    moves.push(alice.rest('POST', '/api/canvas/cursor', { roomId, x: i, y: 2 * i }).then((r) => { t.equal(r.statusCode, 204) }))
    if (i === 10 || i === 50) moves.push(bob.rest('POST', '/api/canvas/cursor', { roomId, x: -i, y: -i }))
    await sleep(10)
  }
  await Promise.all(moves)
  await carolStream.waitFor((m) => ofType('cursors:batch-updated')(m) && (m.json.payload?.cursors as Array<{ userId: string, x: number }>).some((c) => c.userId === alice.userId && c.x === 60))
  await bobStream.waitFor((m) => ofType('cursors:batch-updated')(m) && (m.json.payload?.cursors as Array<{ userId: string, x: number }>).some((c) => c.userId === alice.userId && c.x === 60))
  await aliceBrowser.waitFor((m) => ofType('cursors:batch-updated')(m) && (m.json.payload?.cursors as Array<{ userId: string, x: number }>).some((c) => c.userId === bob.userId && c.x === -50))
  await sleep(300)

  const seenByCarol = batches(carolStream, roomId)
  t.ok(seenByCarol.length >= 3 && seenByCarol.length <= 12, `60 reports became ${seenByCarol.length} messages`)
  const gaps = seenByCarol.slice(1).map((b, i) => b.at - (seenByCarol[i]?.at ?? 0))
  t.ok(gaps.every((gap) => gap >= 60), `at most one message per room per ~100 ms (gaps ${gaps.join(', ')} ms)`)
  for (const batch of seenByCarol) {
    const users = batch.cursors.map((c) => c.userId)
    t.equal(new Set(users).size, users.length, 'one item per user in a batch')
  }
  const item = seenByCarol.flatMap((b) => b.cursors).find((c) => c.userId === alice.userId)
  t.same(Object.keys(item ?? {}).sort(), ['roomId', 'userId', 'x', 'y'], 'an item is { userId, roomId, x, y }')
  const lastOfAlice = seenByCarol.flatMap((b) => b.cursors).filter((c) => c.userId === alice.userId).at(-1)
  t.same(lastOfAlice, { userId: alice.userId, roomId, x: 60, y: 120 }, 'the newest position wins')
  const envelope = carolStream.events().find(ofType('cursors:batch-updated'))
  t.same(Object.keys(envelope?.json ?? {}).sort(), ['payload', 'timestamp', 'type'], 'no userId on a batch')
  t.equal(envelope?.id, undefined, 'cursor messages are ephemeral: no id')

  for (const own of [aliceBrowser, aliceDesktop]) {
    t.notOk(own.events().some((m) => (m.json.payload?.cursors as Array<{ userId: string }> | undefined)?.some((c) => c.userId === alice.userId)), 'Alice never gets her own cursor, on any device')
  }
  t.notOk(bobStream.events().some((m) => (m.json.payload?.cursors as Array<{ userId: string }> | undefined)?.some((c) => c.userId === bob.userId)), 'nor Bob his')
  t.equal(daveStream.events().length, 0, 'a non-member gets no cursors')

  const stored = await sql<{ n: number }>`select count(*)::int as n from event_log where type like 'cursor%' and payload::text like ${`%${roomId}%`}`.execute(s.app.deps.db)
  t.equal(stored.rows[0]?.n, 0, 'cursor traffic is never stored')
})

t.test('leaving, and closing the last stream, produce cursor:left for everyone else', async (t) => {
  const alice = await signInPerson(s, 'alice-left')
  const bob = await signInPerson(s, 'bob-left')
  const roomId = await roomWith(alice, bob)
  const aliceBrowser = await stream(t, alice)
  const aliceDesktop = await stream(t, alice, 'desktop')
  const bobStream = await stream(t, bob)

  await alice.rest('POST', '/api/canvas/cursor', { roomId, x: 1, y: 1 })
  await bobStream.waitFor(ofType('cursors:batch-updated'))
  t.equal((await alice.rest('POST', '/api/canvas/cursor/leave', { roomId })).statusCode, 204)
  const left = await bobStream.waitFor(ofType('cursor:left'))
  t.same(left.json, { type: 'cursor:left', payload: { userId: alice.userId, roomId }, timestamp: left.json.timestamp, userId: alice.userId })
  t.equal(left.id, undefined)

  // Bob, active, closes his only stream: Alice's devices hear he left; she never hears about herself.
  await bob.rest('POST', '/api/canvas/cursor', { roomId, x: 5, y: 5 })
  await aliceBrowser.waitFor(ofType('cursors:batch-updated'))
  bobStream.close()
  for (const device of [aliceBrowser, aliceDesktop]) {
    const bobLeft = await device.waitFor((m) => ofType('cursor:left')(m) && m.json.payload?.userId === bob.userId)
    t.same(bobLeft.json.payload, { userId: bob.userId, roomId })
  }
  t.notOk(aliceBrowser.events().some((m) => ofType('cursor:left')(m) && m.json.payload?.userId === alice.userId), 'no cursor:left about oneself')

  // Alice with two streams: closing one keeps her on the canvas; closing the last one does not.
  const bobAgain = await stream(t, bob)
  await alice.rest('POST', '/api/canvas/cursor', { roomId, x: 9, y: 9 })
  await bobAgain.waitFor(ofType('cursors:batch-updated'))
  aliceDesktop.close()
  await sleep(400)
  t.notOk(bobAgain.events().some(ofType('cursor:left')), 'one of two streams closed: still on the canvas')
  aliceBrowser.close()
  const aliceLeft = await bobAgain.waitFor(ofType('cursor:left'))
  t.same(aliceLeft.json.payload, { userId: alice.userId, roomId })

  // A leave without having moved announces nothing.
  const before = bobAgain.events().length
  t.equal((await alice.rest('POST', '/api/canvas/cursor/leave', { roomId })).statusCode, 204)
  await sleep(300)
  t.equal(bobAgain.events().length, before, 'nothing to announce')
})

t.test('cursor reports: only in rooms the caller may see; validated like every input', async (t) => {
  const owner = await signInPerson(s, 'cursor-owner')
  const stranger = await signInPerson(s, 'cursor-stranger')
  const privateRoom = (await owner.rest('POST', '/api/rooms', { name: 'Mine', isPublic: false })).json().data.id as string
  const publicRoom = (await owner.rest('POST', '/api/rooms', { name: 'Open', isPublic: true })).json().data.id as string

  t.equal((await stranger.rest('POST', '/api/canvas/cursor', { roomId: privateRoom, x: 1, y: 1 })).statusCode, 404, 'a private room does not exist for others')
  t.equal((await stranger.rest('POST', '/api/canvas/cursor', { roomId: 'room_nope', x: 1, y: 1 })).statusCode, 404)
  t.equal((await stranger.rest('POST', '/api/canvas/cursor/leave', { roomId: privateRoom })).statusCode, 404)
  t.equal((await stranger.rest('POST', '/api/canvas/cursor', { roomId: publicRoom, x: 1, y: 1 })).statusCode, 404, 'a public room takes cursors from its members (who opened it)')
  await stranger.rest('GET', `/api/canvas/state?roomId=${publicRoom}`)
  t.equal((await stranger.rest('POST', '/api/canvas/cursor', { roomId: publicRoom, x: 1, y: 1 })).statusCode, 204)
  t.equal((await owner.rest('POST', '/api/canvas/cursor', { roomId: privateRoom, x: 1, y: 1 })).statusCode, 204)

  const bad = await owner.rest('POST', '/api/canvas/cursor', { roomId: publicRoom, x: 'left', y: 1e9 })
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().error, 'ValidationError')
  t.same(bad.json().details.map((d: { field: string }) => d.field).sort(), ['x', 'y'])
  t.equal((await owner.rest('POST', '/api/canvas/cursor', { x: 1, y: 1 })).statusCode, 400)
  t.equal((await owner.rest('POST', '/api/canvas/cursor/leave', {})).statusCode, 400)
  t.equal((await s.app.inject({ method: 'POST', url: '/api/canvas/cursor', payload: { roomId: publicRoom, x: 1, y: 1 } })).statusCode, 401)
})
