// A crowded canvas (DECISIONS §17: no event grows with the square of anything): however many users
// move their cursors in one room at once, each `cursors:batch-updated` carries at most
// MAX_CURSORS_PER_BATCH of them, and the rest follow in the next batches, those waiting longest
// first, so every cursor arrives and none twice in a row while others wait. CursorPresence runs here
// over a relay that hands each message straight back, as one instance's NOTIFY channel does
// (sync.cursors.test.ts covers the same path end to end over real streams).
import t from 'tap'
import type { CursorPosition } from '../src/core/canvas/canvas.types.js'
import { CURSOR_BATCH_MS, MAX_CURSORS_PER_BATCH, createCursorPresence, type CursorRelay } from '../src/live/cursor-presence.js'
import type { Logger } from '../src/infra/logger.js'
import { sleep } from './helpers/sse.js'

const warnings: string[] = []
const log: Logger = { info: () => {}, warn: (_, message) => { warnings.push(message) }, error: (_, message) => { warnings.push(message) } }

function loopback (): CursorRelay {
  const handlers: Array<(body: string) => void> = []
  return {
    send: async (body) => { for (const handler of handlers) handler(body) },
    listen: (handler) => { handlers.push(handler) }
  }
}

async function until (done: () => boolean, timeoutMs = 10_000): Promise<void> {
  for (let waited = 0; !done(); waited += 10) {
    if (waited > timeoutMs) throw new Error('timed out')
    await sleep(10)
  }
}

t.test('250 users moving at once in one room: batches of at most 100, every cursor delivered once', async (t) => {
  t.equal(MAX_CURSORS_PER_BATCH, 100)
  const presence = createCursorPresence(loopback(), log)
  t.teardown(() => { presence.stop() })
  const batches: Array<{ roomId: string, cursors: CursorPosition[] }> = []
  presence.onBatch((roomId, cursors) => { batches.push({ roomId, cursors }) })

  for (let i = 0; i < 250; i++) presence.move({ userId: `user-${i}`, roomId: 'crowded', x: i, y: i })
  presence.move({ userId: 'alone', roomId: 'quiet', x: 1, y: 2 })
  const delivered = (): CursorPosition[] => batches.filter((b) => b.roomId === 'crowded').flatMap((b) => b.cursors)
  await until(() => delivered().length >= 250)
  await sleep(3 * CURSOR_BATCH_MS)

  const crowded = batches.filter((b) => b.roomId === 'crowded').map((b) => b.cursors.length)
  t.same(crowded, [100, 100, 50], 'three batches, none above the cap')
  t.same(delivered().map((c) => c.userId), Array.from({ length: 250 }, (_, i) => `user-${i}`), 'every cursor once, in the order they waited')
  t.same(batches.filter((b) => b.roomId === 'quiet').map((b) => b.cursors), [[{ userId: 'alone', roomId: 'quiet', x: 1, y: 2 }]], 'another room is not held back')
  t.same(warnings, [])
})

t.test('those waiting longest go first: a user just delivered waits behind the rest; a newer position replaces a waiting one in place', async (t) => {
  const presence = createCursorPresence(loopback(), log)
  t.teardown(() => { presence.stop() })
  const batches: CursorPosition[][] = []
  presence.onBatch((_, cursors) => {
    batches.push(cursors)
    if (batches.length > 1) return
    // As the first batch goes out (the next is due in CURSOR_BATCH_MS, these are relayed sooner):
    // user-0, just delivered, moves again; so does user-120, still waiting.
    presence.move({ userId: 'user-0', roomId: 'room', x: 5, y: 5 })
    presence.move({ userId: 'user-120', roomId: 'room', x: 7, y: 7 })
  })

  for (let i = 0; i < 150; i++) presence.move({ userId: `user-${i}`, roomId: 'room', x: 0, y: 0 })
  await until(() => batches.length === 2)
  await sleep(3 * CURSOR_BATCH_MS)
  t.equal(batches[0]?.length, 100)
  t.same(batches[1]?.map((c) => c.userId), [...Array.from({ length: 50 }, (_, i) => `user-${100 + i}`), 'user-0'], 'the 50 left waiting, then the one who moved again after its delivery')
  t.same(batches[1]?.find((c) => c.userId === 'user-120'), { userId: 'user-120', roomId: 'room', x: 7, y: 7 }, 'the newest position, in its old place')
  t.equal(batches.length, 2, 'nothing more')
})
