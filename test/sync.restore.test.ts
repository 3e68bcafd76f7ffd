// The database restored from a backup under a running service (issue 28 item 6): its transaction
// ids go back, so events written after the restore take positions the service has already passed.
// The service notices that the log is behind what it delivered, tells every open stream to refetch
// (`sync:reset`, reason `rewound`) and delivers the new events. Without that, nothing written after
// the restore would reach anyone until the ids caught up.
// The Postgres run of the suite only, on a cluster of its own (it is stopped and restored).
import t from 'tap'
import { startApp } from './helpers/app.js'
import { recordLogs, WARN } from './helpers/logs.js'
import { ownPostgresUnavailable, startOwnPostgres } from './helpers/own-postgres.js'
import { signInPerson, type Person } from './helpers/people.js'
import { ofType, openStream, sleep } from './helpers/sse.js'

/** Creates a private room, retrying while the database is coming back (503s). */
async function room (person: Person, name: string): Promise<void> {
  const deadline = Date.now() + 20_000
  for (;;) {
    const res = await person.rest('POST', '/api/rooms', { name, isPublic: false })
    if (res.statusCode === 201) return
    if (res.statusCode !== 503 || Date.now() > deadline) throw new Error(`create room: ${res.statusCode} ${res.body}`)
    await sleep(100)
  }
}

async function restoreTests (): Promise<void> {
  const cluster = await startOwnPostgres()
  t.teardown(cluster.destroy)
  await cluster.query('create database canvas')
  const logs = recordLogs()
  const s = await startApp({ DATABASE_URL: cluster.urlFor({ database: 'canvas' }), REDIS_URL: undefined, LOG_LEVEL: 'warn' }, { logStream: logs.stream })
  t.teardown(s.close)

  t.test('after a restore, open streams get sync:reset (rewound) and then what is written after it', async (t) => {
    const user = await signInPerson(s, 'restored')
    const opened = await openStream(s.url, { cookie: user.cookie })
    t.teardown(() => { opened.close() })
    for (const name of ['r1', 'r2', 'r3']) await room(user, name)
    const kept = await opened.waitFor((m) => m.json.payload?.name === 'r3')

    const restore = await cluster.backup()
    for (const name of ['r4', 'r5', 'r6', 'r7', 'r8']) await room(user, name)
    const lost = await opened.waitFor((m) => m.json.payload?.name === 'r8', 10_000)
    t.same(opened.events().filter(ofType('room:created')).map((m) => m.json.payload?.name), ['r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7', 'r8'])

    await restore()
    const reset = await opened.waitFor(ofType('sync:reset'), 10_000)
    t.same(reset.json.payload, { reason: 'rewound', lastEventId: lost.id }, 'the stream is told to refetch, with the last id it may have seen')
    t.equal(reset.id, kept.id, 'its id is the newest the log holds now, so a reconnect resumes from there')
    const warning = await logs.waitFor((line) => line.level === WARN && line.msg.startsWith('live events: the event log is behind what was delivered'))
    t.match(warning, { delivered: lost.id, newest: kept.id })

    await room(user, 'after the restore')
    await opened.waitFor((m) => m.json.payload?.name === 'after the restore', 10_000)
    const names = opened.events().map((m) => m.json.type === 'sync:reset' ? 'reset' : m.json.payload?.name)
    t.same(names.slice(names.indexOf('reset')), ['reset', 'after the restore'], 'then live events again')
    t.notOk(await Promise.race([opened.ended.then(() => true), sleep(50).then(() => false)]), 'on the same stream')

    const reconnect = await openStream(s.url, { cookie: user.cookie, lastEventId: lost.id })
    t.teardown(() => { reconnect.close() })
    t.same((await reconnect.waitFor(ofType('sync:reset'))).json.payload, { reason: 'unknown-id', lastEventId: lost.id }, 'an id from before the restore is unknown to the log now')
  })
}

const skip = process.env.DATABASE_URL === undefined
  ? 'the Postgres run of the suite only (DATABASE_URL is not set)'
  : ownPostgresUnavailable()
if (skip !== undefined) t.plan(0, skip)
else await restoreTests()
