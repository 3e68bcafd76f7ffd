// Slow and stalled readers of the event stream (DECISIONS §17, issue 37 item 1), over real HTTP/1.1
// and HTTP/2: a client that stops reading is cut only once it took nothing for the stall time with at
// least 1 MiB waiting, while the server holds a bounded amount for it, and on reconnecting it gets the
// rest, in order; a client that reads slowly but keeps reading is never cut, even when it falls
// behind what a stream queues and catches up from the log. PGlite by default, Postgres when
// DATABASE_URL is set.
import t from 'tap'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { MAX_WAITING_BYTES, STALL_BYTES } from '../src/live/stream-outbox.js'
import { testEnv, type TestApp } from './helpers/app.js'
import { recordLogs } from './helpers/logs.js'
import { burstTitles, commitBurst, EVENT_CHARS, openPaced, PROTOCOLS, roomWithSpark, titles } from './helpers/paced-sse.js'

/** The stall time of this file's app (30 s in production, a config field): long enough that a reader
 *  moving slowly on a crowded machine (client and server share this process) is seen moving. */
const STALL_MS = 4_000
const CUT_LINE = 'live events: a stream\'s client took nothing while a megabyte waited for it; cutting it (it reconnects with Last-Event-ID)'

const logs = recordLogs()
const config = { ...loadConfig(testEnv({ LOG_LEVEL: 'info', SSE_HEARTBEAT_MS: '1000' })), sseStallMs: STALL_MS }
const app = await buildApp(config, { logStream: logs.stream })
const s: TestApp = { app, config, url: await app.listen({ port: 0, host: '127.0.0.1' }), close: async () => { await app.close() } }
t.teardown(s.close)

for (const protocol of PROTOCOLS) {
  t.test(`${protocol}: a paused reader is cut only after taking nothing for the stall time with ≥ 1 MiB waiting; the server holds a bounded amount for it; it then resumes where it was`, async (t) => {
    const room = await roomWithSpark(s, 'burst-paused')
    const paused = await openPaced(t, s, protocol, room.owner)
    paused.pause()
    const from = logs.lines.length
    const streamsBefore = s.app.live.streams.size
    const started = Date.now()
    await commitBurst(s, room, 'paused', 800)
    let held = 0
    const watching = setInterval(() => { held = Math.max(held, s.app.live.streams.pacing().heldBytes) }, 10)
    const line = await logs.waitFor((l) => l.msg === CUT_LINE, 30_000, from)
    const cutAfter = Date.now() - started
    clearInterval(watching)
    t.ok(cutAfter >= STALL_MS, `cut ${cutAfter} ms after the burst, not before the stall time (${STALL_MS} ms)`)
    t.ok(Number(line.waitingBytes) >= STALL_BYTES, `with ${String(line.waitingBytes)} bytes waiting`)
    t.ok(held <= MAX_WAITING_BYTES + EVENT_CHARS + 1_000, `the server held at most ${held} bytes for its streams meanwhile (8 MB committed)`)
    t.equal(s.app.live.streams.size, streamsBefore - 1, 'the stream is gone from the hub')

    // The client wakes: it reads what reached it, then reconnects from its last id and gets the rest.
    paused.resume()
    await paused.ended
    const got = titles(paused)
    t.ok(got.length < 800, `the cut stream had delivered ${got.length} of 800`)
    t.same(got, burstTitles('paused', got.length), 'a prefix, in order')
    const resumed = await openPaced(t, s, protocol, room.owner, paused.events().at(-1)?.id)
    await resumed.waitForUpdates(800 - got.length)
    t.same([...got, ...titles(resumed)], burstTitles('paused', 800), 'with the reconnect: all 800, once, in order')
  })

  t.test(`${protocol}: a reader that is slow but keeps reading is never cut, and gets everything, in order, once`, async (t) => {
    const room = await roomWithSpark(s, 'burst-slow')
    const slow = await openPaced(t, s, protocol, room.owner)
    // HTTP/1.1: the kernel takes a few megabytes at once and reports what was taken in steps of up to
    // a third of the send buffer, so the reader is faster and the burst larger there.
    slow.trickle(20, protocol === 'HTTP/1.1' ? 32_768 : 16_384)
    const from = logs.lines.length
    // How long at least 1 MiB waited for it (sampled): longer than the stall time, or this proves nothing.
    let behindMs = 0
    let caughtUp = false
    let last = Date.now()
    const watching = setInterval(() => {
      const now = Date.now()
      const pacing = s.app.live.streams.pacing()
      if (pacing.waitingBytes >= STALL_BYTES) behindMs += now - last
      if (pacing.catchingUp > 0) caughtUp = true
      last = now
    }, 10)
    // More than a live stream queues (MAX_WAITING_BYTES): it catches up from the log, and goes live again.
    const count = protocol === 'HTTP/1.1' ? 1_400 : 600
    await commitBurst(s, room, 'slow', count)
    await slow.waitForUpdates(count, 120_000)
    clearInterval(watching)
    t.same(titles(slow), burstTitles('slow', count), 'every event, once, in order')
    t.ok(behindMs > STALL_MS, `a megabyte or more waited for it for ${behindMs} ms, longer than the stall time`)
    t.ok(caughtUp, 'it fell behind its queue and caught up from the log')
    t.same(logs.matching((l) => l.msg === CUT_LINE, from), [], 'it was never cut')
    await room.owner.rest('PATCH', `/api/sparks/${room.spark.id}`, { title: 'still live' })
    await slow.waitForUpdates(count + 1)
  })
}
