// A half-open listening connection is noticed (issue 28 item 6): instance B reaches Postgres through
// a proxy that turns B's LISTEN connection into a black hole (open on both sides, nothing passes,
// as after a NAT box or load balancer forgot it). Cursors, which cross instances only as
// notifications, stop reaching B's streams; B's probe notices within seconds and listens again on a
// new connection, and they flow again. Without the probe, TCP keepalive would notice in about 2 hours.
// The Postgres run of the suite only, on a cluster of its own.
import t from 'tap'
import { startApp } from './helpers/app.js'
import { recordLogs, WARN } from './helpers/logs.js'
import { ownPostgresUnavailable, startOwnPostgres } from './helpers/own-postgres.js'
import { signInPerson } from './helpers/people.js'
import { ofType, openStream, sleep } from './helpers/sse.js'
import { startTcpProxy } from './helpers/tcp-proxy.js'

async function probeTests (): Promise<void> {
  const cluster = await startOwnPostgres()
  t.teardown(cluster.destroy)
  const proxy = await startTcpProxy({ host: '127.0.0.1', port: cluster.port })
  t.teardown(proxy.close)
  const logs = recordLogs()
  const a = await startApp({ DATABASE_URL: cluster.url, REDIS_URL: undefined })
  t.teardown(a.close)
  const b = await startApp({ DATABASE_URL: `postgres://postgres@127.0.0.1:${proxy.port}/postgres`, REDIS_URL: undefined, LOG_LEVEL: 'warn' }, { logStream: logs.stream })
  t.teardown(b.close)

  t.test('a listening connection that silently stops answering is replaced; cross-instance messages flow again', async (t) => {
    const alice = await signInPerson(a, 'probe-alice')
    const bob = await signInPerson(a, 'probe-bob')
    const roomId = (await alice.rest('POST', '/api/rooms', { name: 'Probe', isPublic: true })).json().data.id as string
    await bob.rest('GET', `/api/canvas/state?roomId=${roomId}`)
    const onB = await openStream(b.url, { cookie: bob.cookie })
    t.teardown(() => { onB.close() })
    const aliceAt = (x: number) => (m: Parameters<Parameters<typeof onB.waitFor>[0]>[0]): boolean =>
      ofType('cursors:batch-updated')(m) && (m.json.payload?.cursors as Array<{ userId: string, x: number }>).some((c) => c.userId === alice.userId && c.x === x)

    t.equal((await alice.rest('POST', '/api/canvas/cursor', { roomId, x: 1, y: 1 })).statusCode, 204)
    await onB.waitFor(aliceAt(1))
    t.pass('before: a cursor reported on A reaches a stream on B')

    t.equal(proxy.freeze('canvas-live-listener'), 1, 'B\'s one listening connection is now a black hole')
    const frozenAt = Date.now()
    // Alice keeps moving; once B listens again her moves reach it (those sent meanwhile are gone:
    // cursors are ephemeral).
    let x = 2
    let arrived = false
    while (!arrived && Date.now() - frozenAt < 20_000) {
      await alice.rest('POST', '/api/canvas/cursor', { roomId, x, y: 1 })
      arrived = await onB.waitFor(aliceAt(x), 500).then(() => true, () => false)
      x++
    }
    t.ok(arrived, `cursors reach B again ${Date.now() - frozenAt} ms after its listening connection went silent`)
    const lost = await logs.waitFor((line) => line.level === WARN && line.msg === 'live events: notification connection lost, reconnecting', 1_000)
    t.match(lost, { err: { message: /did not answer within/ } }, 'the probe noticed and said why')
    await sleep(100)
  })
}

const skip = process.env.DATABASE_URL === undefined
  ? 'the Postgres run of the suite only (DATABASE_URL is not set)'
  : ownPostgresUnavailable()
if (skip !== undefined) t.plan(0, skip)
else await probeTests()
