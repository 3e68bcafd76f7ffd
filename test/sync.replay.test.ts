// Replay after a reconnect (beyond SPEC's "planned feature"): every event has an SSE id; a client
// reconnecting with Last-Event-ID gets what it missed and may see now, in order, once, then live
// events; an id older than the 24-hour window (or unknown, or too far behind) gets `sync:reset`.
import t, { type Test } from 'tap'
import { sql } from 'kysely'
import { EventSource } from 'eventsource'
import { comparePositions, formatPosition, LOG_START, parsePosition, type LogPosition } from '../src/live/log-position.js'
import { movableClock, startApp, uniqueClientIp, type TestApp } from './helpers/app.js'
import { signInPerson, type Person } from './helpers/people.js'
import { ofType, openStream, positionsIncrease, sleep, type SseMessage, type SseStream } from './helpers/sse.js'

const s = await startApp({ SSE_HEARTBEAT_MS: '1000' })
t.teardown(s.close)

async function stream (t: Test, app: TestApp, person: Person, lastEventId?: string): Promise<SseStream> {
  const opened = await openStream(app.url, { cookie: person.cookie, headers: { 'x-forwarded-for': uniqueClientIp() }, ...(lastEventId === undefined ? {} : { lastEventId }) })
  t.equal(opened.status, 200)
  t.teardown(() => { opened.close() })
  return opened
}

async function sharedRoom (owner: Person, member: Person): Promise<string> {
  const roomId = (await owner.rest('POST', '/api/rooms', { name: 'Replay', isPublic: true })).json().data.id as string
  await member.rest('GET', `/api/canvas/state?roomId=${roomId}`)
  return roomId
}

const titled = (title: string) => (m: SseMessage): boolean => m.event === 'message' && m.json.payload?.title === title
const sparkTitles = (on: SseStream): string[] => on.events().filter((m) => m.json.type === 'spark:created').map((m) => String(m.json.payload?.title))
const positionOf = (id: string | undefined): LogPosition => parsePosition(id ?? '') ?? LOG_START
const increasing = positionsIncrease

t.test('a reconnect with Last-Event-ID gets exactly what it missed and may see, in order, then live events', async (t) => {
  const owner = await signInPerson(s, 'replay-owner')
  const member = await signInPerson(s, 'replay-member')
  const roomId = await sharedRoom(owner, member)
  const ownRoom = (await owner.rest('POST', '/api/rooms', { name: 'Private', isPublic: false })).json().data.id as string

  const first = await stream(t, s, member)
  await owner.rest('POST', '/api/sparks', { title: 'one', content: '', roomId, x: 0, y: 0 })
  await owner.rest('POST', '/api/sparks', { title: 'two', content: '', roomId, x: 200, y: 0 })
  const lastSeen = await first.waitFor(titled('two'))
  first.close()

  await owner.rest('POST', '/api/sparks', { title: 'three', content: '', roomId, x: 400, y: 0 })
  await owner.rest('POST', '/api/sparks', { title: 'hidden', content: '', roomId: ownRoom, x: 0, y: 0 })
  await owner.rest('PATCH', `/api/rooms/${roomId}`, { name: 'Replay, renamed' })
  await owner.rest('POST', '/api/sparks', { title: 'four', content: '', roomId, x: 600, y: 0 })

  const second = await stream(t, s, member, lastSeen.id)
  await second.waitFor(titled('four'))
  await owner.rest('POST', '/api/sparks', { title: 'five', content: '', roomId, x: 800, y: 0 })
  await second.waitFor(titled('five'))
  t.same(second.events().map((m) => m.json.type === 'room:updated' ? 'renamed' : m.json.payload?.title), ['three', 'renamed', 'four', 'five'], 'the missed events the member may see, in order, then the live one; nothing twice')
  t.ok(increasing(second))
  t.ok(comparePositions(positionOf(second.events()[0]?.id), positionOf(lastSeen.id)) > 0)

  const fresh = await stream(t, s, member)
  await owner.rest('POST', '/api/sparks', { title: 'six', content: '', roomId, x: 1000, y: 0 })
  await fresh.waitFor(titled('six'))
  t.same(sparkTitles(fresh), ['six'], 'without Last-Event-ID: live events only (SPEC)')
})

t.test('events committed while a replay runs arrive once, in order', async (t) => {
  const owner = await signInPerson(s, 'race-owner')
  const member = await signInPerson(s, 'race-member')
  const roomId = await sharedRoom(owner, member)
  const first = await stream(t, s, member)
  await owner.rest('POST', '/api/sparks', { title: 'seen', content: '', roomId, x: 0, y: 0 })
  const lastSeen = await first.waitFor(titled('seen'))
  first.close()

  const missed = Array.from({ length: 25 }, (_, i) => `missed-${i}`)
  for (const title of missed) await owner.rest('POST', '/api/sparks', { title, content: '', roomId, x: 0, y: 0 })
  const during = Array.from({ length: 25 }, (_, i) => `during-${i}`)
  const writes = Promise.all(during.map(async (title, i) => { await sleep(i); await owner.rest('POST', '/api/sparks', { title, content: '', roomId, x: 0, y: 0 }) }))
  const second = await stream(t, s, member, lastSeen.id)
  await writes
  for (const title of during) await second.waitFor(titled(title))
  await sleep(200)
  const titles = sparkTitles(second)
  t.same(titles.slice(0, 25), missed, 'first what was missed, in order')
  t.same([...titles].sort(), [...missed, ...during].sort(), 'every event exactly once')
  t.ok(increasing(second), 'ids only increase')
})

t.test('a real EventSource client resumes after its connection drops, without loss or duplicates', async (t) => {
  const owner = await signInPerson(s, 'es-owner')
  const member = await signInPerson(s, 'es-member')
  const roomId = await sharedRoom(owner, member)
  const sentIds: Array<string | undefined> = []
  let drop: (() => void) | undefined
  const ip = uniqueClientIp()
  const source = new EventSource(`${s.url}/api/sync/subscribe`, {
    fetch: async (url, init) => {
      sentIds.push(init.headers['Last-Event-ID'] ?? init.headers['last-event-id'])
      const response = await fetch(url, { ...init, headers: { ...init.headers, cookie: `app_session=${member.cookie}`, 'x-forwarded-for': ip } })
      const reader = response.body?.getReader()
      if (reader !== undefined) drop = () => { void reader.cancel() }
      return {
        url: response.url,
        status: response.status,
        redirected: response.redirected,
        headers: response.headers,
        body: reader === undefined
          ? null
          : {
              getReader: () => ({
                read: async () => { const r = await reader.read(); return r.done ? { done: true as const } : { done: false as const, value: r.value } },
                cancel: async () => { await reader.cancel() }
              })
            }
      }
    }
  })
  t.teardown(() => { source.close() })
  const received: Array<{ id: string, title: string }> = []
  const opened = new Promise<void>((resolve) => { source.addEventListener('open', () => { resolve() }) })
  // Only the sparks: a stream starts at the position its instance has delivered, so under load the
  // setup's own events (the room, the member joining) may still arrive on it.
  source.addEventListener('message', (event) => {
    const message = JSON.parse(event.data) as { type: string, payload: { title?: string } }
    if (message.type === 'spark:created') received.push({ id: event.lastEventId, title: String(message.payload.title) })
  })
  await opened
  const waitForTitle = async (title: string): Promise<void> => {
    for (let i = 0; i < 200 && !received.some((r) => r.title === title); i++) await sleep(25)
  }

  await owner.rest('POST', '/api/sparks', { title: 'a', content: '', roomId, x: 0, y: 0 })
  await owner.rest('POST', '/api/sparks', { title: 'b', content: '', roomId, x: 0, y: 0 })
  await waitForTitle('b')
  drop?.()
  for (const title of ['c', 'd', 'e']) await owner.rest('POST', '/api/sparks', { title, content: '', roomId, x: 0, y: 0 })
  await waitForTitle('e')
  t.same(received.map((r) => r.title), ['a', 'b', 'c', 'd', 'e'], 'all events, once each, in order')
  t.equal(sentIds.length, 2, 'the client reconnected once')
  t.equal(sentIds[1], received[1]?.id, 'sending the id of the last event it had')
})

t.test('ids the log cannot replay get a documented sync:reset, then live events', async (t) => {
  // Its own embedded database and a clock it can move, so pruning touches nobody else's log.
  const clock = movableClock()
  const own = await startApp({ DATABASE_URL: undefined, SSE_HEARTBEAT_MS: '1000' }, { clock })
  t.teardown(own.close)
  const user = await signInPerson(own, 'reset')
  const first = await stream(t, own, user)
  for (const name of ['r1', 'r2', 'r3']) await user.rest('POST', '/api/rooms', { name, isPublic: false })
  const seen = await first.waitFor((m) => m.json.payload?.name === 'r1')
  const newest = await first.waitFor((m) => m.json.payload?.name === 'r3')
  first.close()

  clock.advance(25 * 3600_000)
  t.ok(await own.app.live.bus.prune() >= 3, 'events older than 24 hours are pruned')
  const expired = await stream(t, own, user, seen.id)
  const reset = await expired.waitFor(ofType('sync:reset'))
  t.same(reset.json, { type: 'sync:reset', payload: { reason: 'expired', lastEventId: seen.id }, timestamp: reset.json.timestamp })
  t.equal(reset.id, newest.id, 'the reset carries the newest id, so the next reconnect resumes from there')
  t.equal(expired.events().indexOf(reset), 0, 'it is the first message')
  await user.rest('POST', '/api/rooms', { name: 'after reset', isPublic: false })
  await expired.waitFor((m) => m.json.payload?.name === 'after reset')
  t.same(expired.events().map((m) => m.json.type), ['sync:reset', 'room:created'], 'then live events; nothing replayed')

  const resumed = await stream(t, own, user, reset.id)
  await user.rest('POST', '/api/rooms', { name: 'resumed', isPublic: false })
  await resumed.waitFor((m) => m.json.payload?.name === 'resumed')
  t.same(resumed.events().map((m) => m.json.payload?.name), ['after reset', 'resumed'], 'resuming from the reset id replays what followed it')

  for (const [header, reason] of [['99999999999-1', 'unknown-id'], ['not-a-position', 'unknown-id']] as const) {
    const odd = await stream(t, own, user, header)
    t.same((await odd.waitFor(ofType('sync:reset'))).json.payload, { reason, lastEventId: header }, `Last-Event-ID ${header}`)
  }

  // More than 5,000 missed events: a refetch beats a replay.
  const before = formatPosition((await own.app.live.bus.bounds()).newest)
  await sql`insert into event_log (type, payload, audience, user_id)
    select 'room:updated', '{}'::jsonb, ${JSON.stringify({ kind: 'users', userIds: ['user_nobody'] })}::jsonb, null from generate_series(1, 5001)`.execute(own.app.deps.db)
  const behind = await stream(t, own, user, before)
  t.same((await behind.waitFor(ofType('sync:reset'))).json.payload, { reason: 'too-many', lastEventId: before })
})
