// The session cache without the app (src/core/auth/session-cache.ts): reads batched per turn of the
// event loop and shared by concurrent callers, entries renewed in the background before they expire,
// and a read that raced with a revocation never cached. The app-level behaviour (logout and deletion
// take effect at once, on every instance) is in test/auth.*.test.ts and test/sync.cluster.test.ts.
import t from 'tap'
import { createSessionCache, MAX_REFUSED, RENEWAL_DELAY_MS, SESSION_CACHE_TTL_MS, SESSION_REFRESH_AFTER_MS, type SessionRecord } from '../src/core/auth/session-cache.js'

const DAY_MS = 86_400_000
/** Renewals wait this long to share a query (200 ms in the service). */
const RENEWAL_MS = 20

function record (sessionId: string, nowMs: number, changes: Partial<SessionRecord> = {}): SessionRecord {
  const userId = `user_of_${sessionId}`
  return { userId, expiresAt: new Date(nowMs + DAY_MS), revokedAt: null, user: { id: userId, email: `${sessionId}@example.test`, displayName: sessionId, avatarUrl: '', createdAt: new Date(0).toISOString() }, suspended: false, ...changes }
}

/** A cache over an in-memory table of sessions whose reads the test can count, hold and fail. */
function harness () {
  let now = 1_000_000_000
  const table = new Map<string, SessionRecord>()
  const reads: string[][] = []
  let gate: Promise<void> | undefined
  let failWith: Error | undefined
  const refreshErrors: unknown[] = []
  const cache = createSessionCache({
    now: () => now,
    load: async (ids) => {
      reads.push([...ids])
      // The read happens when it is sent: a row changed while it is held is not seen.
      const rows = new Map(ids.flatMap((id) => { const row = table.get(id); return row === undefined ? [] : [[id, row] as const] }))
      if (gate !== undefined) await gate
      if (failWith !== undefined) throw failWith
      return rows
    },
    onRefreshError: (error) => { refreshErrors.push(error) },
    renewalDelayMs: RENEWAL_MS
  })
  return {
    cache,
    table,
    reads,
    refreshErrors,
    get now () { return now },
    advance (ms: number) { now += ms },
    /** Holds every read sent from now on until the returned function is called. */
    hold (): () => void {
      let open!: () => void
      gate = new Promise((resolve) => { open = resolve })
      return () => { gate = undefined; open() }
    },
    fail (error: Error | undefined) { failWith = error }
  }
}

const turn = async (): Promise<void> => { await new Promise((resolve) => setImmediate(resolve)) }
/** Long enough for renewals to be sent and answered. */
const renewed = async (): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, 3 * RENEWAL_MS)) }

t.test('concurrent callers of one session share one read; every session asked for in one turn is one query', async (t) => {
  const h = harness()
  for (let i = 0; i < 700; i++) h.table.set(`ses_${i}`, record(`ses_${i}`, h.now))
  const same = await Promise.all(Array.from({ length: 50 }, async () => await h.cache.load('ses_0')))
  t.equal(h.reads.length, 1, '50 concurrent loads of one session: one read')
  t.ok(same.every((r) => r?.userId === 'user_of_ses_0'))
  t.equal(h.cache.get('ses_0', h.now)?.userId, 'user_of_ses_0', 'cached')

  const many = await Promise.all(Array.from({ length: 700 }, async (_, i) => await h.cache.load(`ses_${i}`)))
  t.same(h.reads.slice(1).map((ids) => ids.length), [500, 200], '700 sessions in one turn: two queries of at most 500')
  t.ok(many.every((r, i) => r?.userId === `user_of_ses_${i}`), 'each caller gets its own session')
  t.equal(await h.cache.load('ses_missing'), undefined, 'an unknown session is undefined')
  t.equal(h.cache.get('ses_missing', h.now), undefined, 'and not cached')
})

t.test('an entry is served within the TTL, renewed in the background once due, and never served older than the TTL', async (t) => {
  const h = harness()
  h.table.set('ses_a', record('ses_a', h.now))
  await h.cache.load('ses_a')
  t.equal(h.reads.length, 1)

  h.advance(SESSION_REFRESH_AFTER_MS - 1)
  t.ok(h.cache.get('ses_a', h.now))
  await renewed()
  t.equal(h.reads.length, 1, 'not due yet: no read')

  h.advance(1)
  h.table.set('ses_a', record('ses_a', h.now, { user: { ...record('ses_a', h.now).user, displayName: 'renamed' } }))
  t.equal(h.cache.get('ses_a', h.now)?.user.displayName, 'ses_a', 'due: still served as cached...')
  t.equal(h.cache.get('ses_a', h.now)?.user.displayName, 'ses_a')
  await turn()
  t.equal(h.reads.length, 1, 'renewals wait a little to share a query')
  await renewed()
  t.equal(h.reads.length, 2, '...and renewed by one background read')
  t.equal(h.cache.get('ses_a', h.now)?.user.displayName, 'renamed', 'the renewed entry is served')
  await renewed()
  t.equal(h.reads.length, 2, 'a fresh entry is not read again')

  // A session nobody asks for is not renewed, and is gone once the TTL has passed.
  h.advance(SESSION_CACHE_TTL_MS)
  t.equal(h.cache.get('ses_a', h.now), undefined, 'older than the TTL: not served')
})

t.test('a renewal that finds the session revoked, expired or gone removes the entry', async (t) => {
  const h = harness()
  for (const id of ['ses_r', 'ses_e', 'ses_g']) { h.table.set(id, record(id, h.now)); await h.cache.load(id) }
  h.advance(SESSION_REFRESH_AFTER_MS)
  h.table.set('ses_r', record('ses_r', h.now, { revokedAt: new Date(h.now) }))
  h.table.set('ses_e', record('ses_e', h.now, { expiresAt: new Date(h.now) }))
  h.table.delete('ses_g')
  for (const id of ['ses_r', 'ses_e', 'ses_g']) t.ok(h.cache.get(id, h.now), `${id} served while due`)
  await renewed()
  t.equal(h.reads.length, 4, 'three renewals, one query')
  for (const id of ['ses_r', 'ses_e', 'ses_g']) t.equal(h.cache.get(id, h.now), undefined, `${id} gone after its renewal`)
})

t.test('a read under way when its session is forgotten answers its callers but is not cached, and nobody joins it', async (t) => {
  const h = harness()
  h.table.set('ses_x', record('ses_x', h.now))
  const release = h.hold()
  const before = h.cache.load('ses_x')
  await turn() // sent: it read the row as it was
  h.table.set('ses_x', record('ses_x', h.now, { revokedAt: new Date(h.now) }))
  h.cache.forgetSession('ses_x') // as logout does, once the revocation is committed
  const after = h.cache.load('ses_x')
  await turn()
  t.equal(h.reads.length, 2, 'a load after the forget starts its own read')
  release()
  t.equal((await before)?.revokedAt, null, 'the earlier caller gets what its read saw')
  t.not((await after)?.revokedAt, null, 'the later caller sees the revocation')
  t.equal(h.cache.get('ses_x', h.now), undefined, 'and the earlier read was not cached')
})

t.test('the same for a renewal under way, for a forgotten user and after losing track of the signals', async (t) => {
  for (const forget of ['session', 'user', 'all'] as const) {
    const h = harness()
    h.table.set('ses_y', record('ses_y', h.now))
    await h.cache.load('ses_y')
    h.advance(SESSION_REFRESH_AFTER_MS)
    const release = h.hold()
    t.ok(h.cache.get('ses_y', h.now), 'due: renewal asked for')
    await renewed() // sent, and held
    if (forget === 'session') h.cache.forgetSession('ses_y')
    else if (forget === 'user') h.cache.forgetUser('user_of_ses_y')
    else h.cache.clear()
    release()
    await renewed()
    t.equal(h.reads.length, 2)
    t.equal(h.cache.get('ses_y', h.now), undefined, `forget ${forget}: the renewal under way is not cached`)
  }
})

t.test('a failed read fails its callers; a failed renewal leaves the entry to expire', async (t) => {
  const h = harness()
  h.table.set('ses_f', record('ses_f', h.now))
  h.fail(new Error('database down'))
  await t.rejects(Promise.all([h.cache.load('ses_f'), h.cache.load('ses_f')]), /database down/)
  t.equal(h.reads.length, 1)
  h.fail(undefined)
  t.equal((await h.cache.load('ses_f'))?.userId, 'user_of_ses_f', 'the next load reads again')

  h.advance(SESSION_REFRESH_AFTER_MS)
  h.fail(new Error('database down'))
  t.ok(h.cache.get('ses_f', h.now))
  await renewed()
  t.equal(h.refreshErrors.length, 1, 'the renewal failure is reported')
  t.ok(h.cache.get('ses_f', h.now), 'the entry is still served within its TTL')
  h.advance(SESSION_CACHE_TTL_MS - SESSION_REFRESH_AFTER_MS)
  t.equal(h.cache.get('ses_f', h.now), undefined, 'and expires with it')
})

t.test('a caller waiting for a session whose renewal is queued has it sent at once', async (t) => {
  const h = harness()
  h.table.set('ses_q', record('ses_q', h.now))
  await h.cache.load('ses_q')
  h.advance(SESSION_CACHE_TTL_MS - 1)
  t.ok(h.cache.get('ses_q', h.now), 'due: renewal queued')
  h.advance(1)
  t.equal(h.cache.get('ses_q', h.now), undefined, 'expired before the renewal went')
  const started = Date.now()
  t.equal((await h.cache.load('ses_q'))?.userId, 'user_of_ses_q')
  t.ok(Date.now() - started < RENEWAL_MS, 'the load joined the queued read without waiting for the renewal delay')
  t.equal(h.reads.length, 2, 'one read for both')
  t.ok(RENEWAL_DELAY_MS < SESSION_CACHE_TTL_MS - SESSION_REFRESH_AFTER_MS, 'the service\'s renewal delay is well inside the TTL')
})

t.test('a revoked or absent session is remembered as refused: later callers need no read', async (t) => {
  const h = harness()
  h.table.set('ses_rev', record('ses_rev', h.now, { revokedAt: new Date(h.now) }))
  t.not((await h.cache.load('ses_rev'))?.revokedAt, null)
  t.equal(await h.cache.load('ses_gone'), undefined)
  t.equal(h.reads.length, 2)
  t.equal(h.cache.refusal('ses_rev'), 'revoked')
  t.equal(h.cache.refusal('ses_gone'), 'absent')
  // Refusals are final: no TTL, and nothing a signal says makes them valid again.
  h.advance(10 * SESSION_CACHE_TTL_MS)
  h.cache.clear()
  h.cache.forgetUser('user_of_ses_rev')
  t.equal(h.cache.refusal('ses_rev'), 'revoked', 'still refused after the TTL and after losing track of the signals')
  t.equal(h.cache.refusal('ses_valid'), undefined, 'a session never read is not refused')

  // A revocation this instance made or heard of: refused at once, its cached entry gone.
  h.table.set('ses_out', record('ses_out', h.now))
  await h.cache.load('ses_out')
  t.ok(h.cache.get('ses_out', h.now))
  h.cache.refuse('ses_out', 'revoked')
  t.equal(h.cache.get('ses_out', h.now), undefined)
  t.equal(h.cache.refusal('ses_out'), 'revoked')
})

t.test('a read under way when its session is revoked still records the refusal it finds', async (t) => {
  const h = harness()
  h.table.set('ses_z', record('ses_z', h.now, { revokedAt: new Date(h.now) }))
  const release = h.hold()
  const pending = h.cache.load('ses_z')
  await turn()
  h.cache.clear()
  release()
  await pending
  t.equal(h.cache.refusal('ses_z'), 'revoked', 'a refusal cannot be outdated by what happened meanwhile')
})

t.test('refusals are bounded: a flood of unknown sessions keeps the most recently used', async (t) => {
  const h = harness()
  const flood = MAX_REFUSED + 500
  await Promise.all(Array.from({ length: flood }, async (_, i) => await h.cache.load(`ses_flood_${i}`)))
  t.equal(h.reads.length, Math.ceil(flood / 500), 'read in batches of 500')
  t.equal(h.cache.refusal('ses_flood_0'), undefined, 'the oldest refusals made room')
  t.equal(h.cache.refusal(`ses_flood_${flood - 1}`), 'absent', 'the newest are kept')
  let kept = 0
  for (let i = 0; i < flood; i++) if (h.cache.refusal(`ses_flood_${i}`) !== undefined) kept++
  t.equal(kept, MAX_REFUSED, `at most MAX_REFUSED (${MAX_REFUSED}) remembered`)

  // One in use survives a flood: each look moves it to the back of the line.
  await h.cache.load('ses_replayed')
  for (let i = 0; i < MAX_REFUSED; i++) {
    await h.cache.load(`ses_more_${i}`)
    if (i % 1_000 === 0) t.equal(h.cache.refusal('ses_replayed'), 'absent')
  }
  t.equal(h.cache.refusal('ses_replayed'), 'absent', 'a refusal in use is kept while a flood passes')
})
