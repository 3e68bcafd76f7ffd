// What operators read while a dependency fails (issue 37 item 6, DECISIONS §17): one warning per
// failing part per 10 s, never one per cached session or per request — here a Postgres of the test's
// own stopped under twenty signed-in users who keep calling, whose cached sessions all come due for
// renewal while it is away. And the delivery-stall warning says plainly when the service's role may
// not see another role's session (no `open null ms`), and names how long once it has pg_monitor.
// The Postgres run of the suite only, on a cluster of its own (stopping the shared one would break
// every other test file).
import t from 'tap'
import pg from 'pg'
import { startApp, uniqueClientIp } from './helpers/app.js'
import { recordLogs, WARN, type LogLine } from './helpers/logs.js'
import { ownPostgresUnavailable, startOwnPostgres } from './helpers/own-postgres.js'
import { signInPerson, type Person } from './helpers/people.js'
import { sleep } from './helpers/sse.js'
import { LOG_EVERY_MS } from '../src/infra/throttled-log.js'

const SESSIONS = 20

async function outageTests (): Promise<void> {
  const cluster = await startOwnPostgres()
  t.teardown(cluster.destroy)

  t.test(`Postgres away under ${SESSIONS} cached sessions: at most one warning per part per 10 s`, async (t) => {
    const logs = recordLogs()
    const s = await startApp({ DATABASE_URL: cluster.url, LOG_LEVEL: 'warn' }, { logStream: logs.stream })
    t.teardown(s.close)
    const people: Person[] = []
    for (let i = 0; i < SESSIONS; i++) people.push(await signInPerson(s, `outage-${i}`))
    // Every session cached.
    for (const person of people) t.equal((await person.rest('GET', '/api/auth/me')).statusCode, 200)

    const from = logs.lines.length
    await cluster.stop()
    const stoppedAt = performance.now()
    // Each user keeps calling: their cached sessions pass the renewal age (5 s) and the TTL (10 s)
    // while Postgres is away, so every one of them is renewed in the background, and fails.
    while (performance.now() - stoppedAt < 12_000) {
      await Promise.all(people.map(async (person) => await person.rest('GET', '/api/auth/me', undefined, { 'x-forwarded-for': uniqueClientIp() })))
      await sleep(500)
    }
    const elapsed = performance.now() - stoppedAt
    await cluster.start()

    const lines = logs.matching((line) => line.level >= WARN, from)
    const renewals = lines.filter((line) => line.msg.startsWith('session cache: renewing sessions failed'))
    t.ok(renewals.length >= 1, 'the failing renewals are reported')
    const bound = 1 + Math.floor(elapsed / LOG_EVERY_MS)
    t.ok(renewals.length <= bound, `${renewals.length} session-cache warnings in ${Math.round(elapsed)} ms (at most ${bound}), not one per session`)
    const byPart = new Map<string, LogLine[]>()
    for (const line of lines) byPart.set(line.msg, [...(byPart.get(line.msg) ?? []), line])
    for (const [message, ofPart] of byPart) t.ok(ofPart.length <= bound, `${ofPart.length} × "${message.slice(0, 70)}"`)
    t.ok(lines.length <= byPart.size * bound, `${lines.length} warnings and errors in all, from ${byPart.size} parts`)
  })

  t.test('a blocker of another role: the warning says the role may not see it, and how long once it has pg_monitor', async (t) => {
    await cluster.query('create role canvas_unprivileged login')
    await cluster.query('create database canvas_unprivileged owner canvas_unprivileged')
    const logs = recordLogs()
    const s = await startApp({ DATABASE_URL: cluster.urlFor({ user: 'canvas_unprivileged', database: 'canvas_unprivileged' }), LOG_LEVEL: 'warn' }, { logStream: logs.stream })
    t.teardown(s.close)
    const user = await signInPerson(s, 'stall-role')

    /** Holds a transaction id open as the superuser (another role) while an event is written. */
    async function warningWhileHeld (): Promise<LogLine> {
      const psql = new pg.Client({ connectionString: cluster.url, application_name: 'other-role-psql' })
      await psql.connect()
      try {
        await psql.query('begin')
        await psql.query('select pg_current_xact_id()')
        const from = logs.lines.length
        t.equal((await user.rest('POST', '/api/rooms', { name: 'held back', isPublic: false })).statusCode, 201)
        // Delivery is read by the bus every second or on notification; the warning comes after 2 s.
        return await logs.waitFor((line) => line.level === WARN && line.msg.startsWith('live events: delivery is held back'), 8_000, from)
      } finally {
        await psql.query('commit').catch(() => {})
        await psql.end().catch(() => {})
      }
    }

    const hidden = await warningWhileHeld()
    t.notMatch(hidden.msg, /null/, 'no "open null ms"')
    t.match(hidden.msg, /may not see/, 'says the role may not see the other session')
    t.match(hidden.msg, /pg_monitor/, 'and how to let it')

    await cluster.query('grant pg_monitor to canvas_unprivileged')
    // A warning comes at most once per 10 s: wait for the next window.
    await sleep(LOG_EVERY_MS)
    const seen = await warningWhileHeld()
    t.match(seen.msg, /other-role-psql\), open \d+ ms$/, 'with pg_monitor: which session, open how long')
  })
}

const skip = process.env.DATABASE_URL === undefined
  ? 'the Postgres run of the suite only (DATABASE_URL is not set): an outage needs a server to stop'
  : ownPostgresUnavailable()
if (skip !== undefined) t.plan(0, skip)
else await outageTests()
