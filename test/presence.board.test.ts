// The presence board's rules below the HTTP surface (src/live/cursor-presence.ts, stream-outbox.ts),
// where test/presence.test.ts cannot steer the timing: several boards over one in-memory relay that
// hands every message to every board in one order, as the NOTIFY channel does. A board that starts
// late asks, and merges the others' answers (the earliest `since`, the latest `lastActiveAt`); a pair
// it saw leave after it asked is not brought back by an answer written before that leave; an answer
// addressed to another board changes nothing; a join is announced once and every left has its join.
// A stream catching up from the log skips `cursor:left` but never `presence:*`.
import t from 'tap'
import { createCursorPresence, type CursorPresence, type CursorRelay } from '../src/live/cursor-presence.js'
import type { PresenceRecord } from '../src/core/presence/presence.types.js'
import type { Logger } from '../src/infra/logger.js'
import { LOG_START } from '../src/live/log-position.js'
import { StreamOutbox } from '../src/live/stream-outbox.js'
import { sleep } from './helpers/sse.js'

const log: Logger = { info: () => {}, warn: () => {}, error: () => {} }

/** One channel: every message reaches every listener, in the order sent; `hold` keeps them back until released. */
function channel (): { relay: () => CursorRelay, hold: () => void, release: () => void, sent: string[] } {
  const listeners: Array<(body: string) => void> = []
  const held: string[] = []
  const sent: string[] = []
  let holding = false
  const deliver = (body: string): void => { for (const listener of listeners) listener(body) }
  return {
    sent,
    relay: () => ({
      send: async (body) => {
        sent.push(body)
        if (holding) held.push(body)
        else deliver(body)
      },
      listen: (handler) => { listeners.push(handler) }
    }),
    hold: () => { holding = true },
    release: () => {
      holding = false
      for (const body of held.splice(0)) deliver(body)
    }
  }
}

function board (relay: CursorRelay, now: () => number = Date.now): CursorPresence & { joins: Array<[string, PresenceRecord]>, lefts: Array<[string, string]> } {
  const presence = createCursorPresence(relay, log, now)
  const joins: Array<[string, PresenceRecord]> = []
  const lefts: Array<[string, string]> = []
  presence.onJoined((roomId, record) => { joins.push([roomId, record]) })
  presence.onLeft((roomId, userId) => { lefts.push([roomId, userId]) })
  return Object.assign(presence, { joins, lefts })
}

async function until (done: () => boolean, timeoutMs = 2_000): Promise<void> {
  for (let waited = 0; !done(); waited += 10) {
    if (waited > timeoutMs) throw new Error('timed out')
    await sleep(10)
  }
}

t.test('a board that starts late learns from the others: their times, merged; once per pair', async (t) => {
  const bus = channel()
  let clock = 1_000_000
  const first = board(bus.relay(), () => clock)
  t.teardown(() => { first.stop() })
  first.present('ann', 'room')
  first.move({ userId: 'ben', roomId: 'room', x: 1, y: 2 })
  await until(() => first.presentIn('room').length === 2)
  clock += 5_000
  first.present('ann', 'room')
  await until(() => first.presentIn('room').find((r) => r.userId === 'ann')?.lastActiveAt === clock)

  clock += 60_000
  const late = board(bus.relay(), () => clock)
  t.teardown(() => { late.stop() })
  t.same(late.presentIn('room'), [], 'knows nobody on its own')
  late.resync()
  await until(() => late.presentIn('room').length === 2)
  t.same(late.presentIn('room'), first.presentIn('room'), 'the same users with the same times')
  t.same(late.joins.map(([roomId, r]) => [roomId, r.userId]).sort(), [['room', 'ann'], ['room', 'ben']], 'each announced once on the late board')
  t.equal(first.joins.length, 2, 'the first board announced nothing again')

  // A third board asks: both answer; the late board's copy merges into the same figures.
  const third = board(bus.relay(), () => clock)
  t.teardown(() => { third.stop() })
  third.resync()
  await until(() => third.presentIn('room').length === 2)
  await sleep(20)
  t.same(third.presentIn('room'), first.presentIn('room'))
  t.equal(third.joins.length, 2, 'two answers, one announcement per pair')
  t.equal(late.joins.length, 2, 'an answer addressed to another board changes nothing')
})

t.test('a leave seen after asking is not undone by an answer written before it', async (t) => {
  const bus = channel()
  const first = board(bus.relay())
  t.teardown(() => { first.stop() })
  first.present('ann', 'room')
  first.present('ben', 'room')
  await until(() => first.presentIn('room').length === 2)

  // A board whose channel the test drives by hand: what it sends is kept, what it hears is chosen.
  const sentByLate: string[] = []
  const hear: Array<(body: string) => void> = []
  const late = board({ send: async (body) => { sentByLate.push(body) }, listen: (handler) => { hear.push(handler) } })
  t.teardown(() => { late.stop() })
  late.resync()
  await until(() => sentByLate.length === 1)
  // The request reaches the first board, which answers while Ann is present; then Ann leaves.
  await bus.relay().send(sentByLate[0] ?? '')
  const answer = bus.sent.find((body) => body.startsWith('{"a":')) ?? ''
  t.match(answer, /"ann"/, 'the answer lists Ann')
  first.leave('ann', 'room')
  await until(() => bus.sent.some((body) => body.includes('"l":[["room","ann"]]')))
  const leave = bus.sent.find((body) => body.includes('"l":[["room","ann"]]')) ?? ''

  // The late board hears the leave first, then the answer written before it.
  for (const handler of hear) handler(leave)
  for (const handler of hear) handler(answer)
  t.same(late.presentIn('room').map((r) => r.userId), ['ben'], 'Ann stays gone')
  t.same(late.joins.map(([, r]) => r.userId), ['ben'], 'and is not announced')
  t.same(late.lefts, [], 'nothing to leave: it never knew her')

  // An answer addressed to another board changes nothing.
  for (const handler of hear) handler(answer.replace(/"a":"[^"]+"/, '"a":"someone-else"').replace('"ben"', '"cy"'))
  t.same(late.presentIn('room').map((r) => r.userId), ['ben'])
})

t.test('a leave is announced with its join; a presence report does not hide a waiting cursor', async (t) => {
  const bus = channel()
  const one = board(bus.relay())
  t.teardown(() => { one.stop() })
  const batches: unknown[] = []
  one.onBatch((roomId, cursors) => { batches.push({ roomId, cursors }) })
  one.move({ userId: 'ann', roomId: 'room', x: 3, y: 4 })
  one.present('ann', 'room')
  await until(() => batches.length === 1)
  t.same(batches, [{ roomId: 'room', cursors: [{ userId: 'ann', roomId: 'room', x: 3, y: 4 }] }], 'the position still went out')
  one.userGone('ann')
  await until(() => one.lefts.length === 1)
  t.same(one.lefts, [['room', 'ann']])
  t.same(one.joins.map(([roomId, r]) => [roomId, r.userId]), [['room', 'ann']])
  t.same(one.presentIn('room'), [])
})

t.test('a stream catching up skips cursor:left but never presence messages', async (t) => {
  const written: string[] = []
  const outbox = new StreamOutbox({
    write: (bytes) => { written.push(bytes.toString()) },
    batch: (writes) => { writes() },
    end: () => {},
    abort: () => {}
  }, { through: LOG_START, catchingUp: true, stallMs: 30_000, fellBehind: () => {}, stalled: () => {}, failed: () => {} })
  t.teardown(() => { outbox.close() })
  const at = new Date().toISOString()
  outbox.note({ data: { type: 'cursor:left', payload: { userId: 'u', roomId: 'r' }, timestamp: at, userId: 'u' } }, 'cursor-left')
  outbox.note({ data: { type: 'cursors:batch-updated', payload: { cursors: [] }, timestamp: at } }, 'cursors')
  outbox.note({ data: { type: 'presence:joined', payload: { roomId: 'r', user: { userId: 'u' } }, timestamp: at, userId: 'u' } }, 'presence')
  outbox.note({ data: { type: 'presence:left', payload: { roomId: 'r', userId: 'u' }, timestamp: at, userId: 'u' } }, 'presence')
  await until(() => written.length >= 2)
  await sleep(10)
  const types = written.map((frame) => /"type":"([^"]+)"/.exec(frame)?.[1])
  t.same(types, ['presence:joined', 'presence:left'])
})
