// A stream paces itself and never strands a reader (DECISIONS §17, issue 37 item 1), over real HTTP/1.1
// and HTTP/2: a commit of 150 events of ~10 KB reaches an open stream whole; the same missed and then
// replayed after Last-Event-ID arrives whole and in order, and so do 165 updates of 9,000 characters
// made through the API. Slow and stalled readers: test/sync.slow-readers.test.ts. PGlite by default,
// Postgres when DATABASE_URL is set.
import t from 'tap'
import type { Spark } from '../src/core/sparks/sparks.types.js'
import { startApp } from './helpers/app.js'
import { burstTitles, commitBurst, openPaced, PROTOCOLS, roomWithSpark, titles } from './helpers/paced-sse.js'
import { signInPerson } from './helpers/people.js'
import { positionsIncrease } from './helpers/sse.js'

const s = await startApp({ SSE_HEARTBEAT_MS: '1000' })
t.teardown(s.close)

for (const protocol of PROTOCOLS) {
  t.test(`${protocol}: a commit of 150 events of ~10 KB reaches an open stream whole, in order`, async (t) => {
    const room = await roomWithSpark(s, 'burst-live')
    const live = await openPaced(t, s, protocol, room.owner)
    await commitBurst(s, room, 'live', 150)
    await live.waitForUpdates(150)
    t.same(titles(live), burstTitles('live', 150), 'every event, once, in order')
    t.ok(live.events().reduce((sum, m) => sum + m.data.length, 0) > 1.4 * (1 << 20), 'more than a megabyte and a half in one commit')
    t.ok(positionsIncrease(live))
    // The stream carries on live.
    await room.owner.rest('PATCH', `/api/sparks/${room.spark.id}`, { title: 'after the burst' })
    await live.waitForUpdates(151)
    t.equal(titles(live).at(-1), 'after the burst')
  })

  t.test(`${protocol}: missed and replayed after Last-Event-ID — a commit of 150 and 165 API updates of 9,000 characters — all arrive in order, then live ones`, async (t) => {
    const room = await roomWithSpark(s, 'burst-replay')
    // A second writer: the API's write tier allows 100 writes a minute per user.
    const helper = await signInPerson(s, 'burst-helper')
    const shared = (await room.owner.rest('POST', '/api/rooms', { name: 'shared', isPublic: true })).json().data.id as string
    await helper.rest('GET', `/api/canvas/state?roomId=${shared}`)
    const mine = (await room.owner.rest('POST', '/api/sparks', { roomId: shared, title: 'mine', content: '', x: 0, y: 0 })).json().data as Spark
    const theirs = (await helper.rest('POST', '/api/sparks', { roomId: shared, title: 'theirs', content: '', x: 400, y: 0 })).json().data as Spark

    const first = await openPaced(t, s, protocol, room.owner)
    await room.owner.rest('PATCH', `/api/sparks/${room.spark.id}`, { title: 'seen' })
    await first.waitForUpdates(1)
    const lastSeen = first.events().find((m) => m.json.payload?.title === 'seen')?.id
    first.close()

    await commitBurst(s, room, 'missed', 150)
    const updates: string[] = []
    const statuses = new Set<number>()
    for (let i = 0; i < 165; i++) {
      const [who, spark] = i % 2 === 0 ? [room.owner, mine] : [helper, theirs]
      const title = `api-${i}`
      updates.push(title)
      statuses.add((await who.rest('PATCH', `/api/sparks/${spark.id}`, { title, content: `${title} `.padEnd(9_000, 'klmnopqrst') })).statusCode)
    }
    t.same([...statuses], [200], 'every update was made')
    const replayed = await openPaced(t, s, protocol, room.owner, lastSeen)
    await replayed.waitForUpdates(315)
    await room.owner.rest('PATCH', `/api/sparks/${room.spark.id}`, { title: 'live again' })
    await replayed.waitForUpdates(316)
    t.same(titles(replayed), [...burstTitles('missed', 150), ...updates, 'live again'], 'every missed event once, in order, then the live one')
    t.ok(positionsIncrease(replayed), 'ids only increase')
    t.ok(replayed.events().reduce((sum, m) => sum + m.data.length, 0) > 2.5 * (1 << 20), 'a replay of nearly three megabytes')
  })
}
