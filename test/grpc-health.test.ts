// grpc.health.v1.Health over time (DECISIONS §17): Watch sends the state at once and each change, ends
// when the server closes and is bounded; a server process says NOT_SERVING from SIGTERM on, while it
// still serves (SHUTDOWN_DELAY_MS), to Python grpcio (the C-core stack, test/helpers/grpcio_client.py)
// calling the standard path. Check itself, and the paths, are test/grpc-standard-paths.test.ts's.
import t from 'tap'
import { execFile, spawnSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { create, fromBinary, toBinary } from '@bufbuild/protobuf'
import { Code, ConnectError, createClient } from '@connectrpc/connect'
import { createGrpcTransport } from '@connectrpc/connect-node'
import { Health, HealthCheckRequestSchema, HealthCheckResponse_ServingStatus as Status, HealthCheckResponseSchema } from '../src/gen/grpc/health/v1/health_pb.js'
import { startApp, type TestApp } from './helpers/app.js'
import { startServer } from './helpers/server-process.js'

const PYTHON = '/usr/bin/python3'
const CLIENT = join(import.meta.dirname, 'helpers', 'grpcio_client.py')
const grpcio = spawnSync(PYTHON, ['-c', 'import grpc; print(grpc.__version__)'], { encoding: 'utf8' })
const noGrpcio = grpcio.status === 0 ? false : `Python grpcio is not installed (apt-get install python3-grpcio python3-protobuf): ${grpcio.stderr || String(grpcio.error)}`

interface Outcome { code: string, details: string, body: string | null }

/** Health/Check of each name, in order, on one grpcio channel. */
async function checks (address: string, services: string[]): Promise<Outcome[]> {
  const calls = services.map((service) => ({ path: '/grpc.health.v1.Health/Check', body: Buffer.from(toBinary(HealthCheckRequestSchema, create(HealthCheckRequestSchema, { service }))).toString('base64') }))
  return await new Promise((resolve, reject) => {
    const child = execFile(PYTHON, [CLIENT], { timeout: 60_000 }, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`${error.message}\n${stderr}`))
      else resolve(JSON.parse(stdout) as Outcome[])
    })
    child.stdin?.end(JSON.stringify({ target: address, tls: null, calls }))
  })
}

const statusOf = (outcome: Outcome): Status => fromBinary(HealthCheckResponseSchema, Buffer.from(outcome.body ?? '', 'base64')).status

t.test('Watch: the state at once, each change (drain: NOT_SERVING), the end on close; SERVICE_UNKNOWN for another name; at most the bound open at once', async (t) => {
  // An instance of its own: this one is drained and closed.
  const own: TestApp = await startApp({}, { maxHealthWatches: 2 })
  t.teardown(own.close)
  const health = createClient(Health, createGrpcTransport({ baseUrl: own.url }))
  const watch = health.watch({ service: 'app.rooms.v1.RoomsService' })[Symbol.asyncIterator]()
  const unknown = health.watch({ service: 'no.such.v1.Service' })[Symbol.asyncIterator]()
  t.equal((await watch.next()).value?.status, Status.SERVING, 'SERVING at once')
  t.equal((await unknown.next()).value?.status, Status.SERVICE_UNKNOWN, 'an unknown name: SERVICE_UNKNOWN, the call kept open')

  const third = await health.watch({})[Symbol.asyncIterator]().next().catch((error: unknown) => ConnectError.from(error))
  t.equal(third instanceof ConnectError ? third.code : undefined, Code.ResourceExhausted, 'past the bound (2 here): RESOURCE_EXHAUSTED')

  own.app.drain()
  t.equal((await watch.next()).value?.status, Status.NOT_SERVING, 'draining: NOT_SERVING')
  const closed = own.close()
  t.same(await watch.next(), { done: true, value: undefined }, 'the server closes: the call ends')
  t.same(await unknown.next(), { done: true, value: undefined }, 'every Watch ends')
  await closed
})

t.test('a server process: Check says SERVING, then NOT_SERVING from SIGTERM on while it still serves (SHUTDOWN_DELAY_MS)', { skip: noGrpcio }, async (t) => {
  const delayMs = 3_000
  const server = await startServer({ SHUTDOWN_DELAY_MS: String(delayMs), TRUST_PROXY: '127.0.0.1', RATE_LIMIT_KEY_PREFIX: `test-${randomUUID()}:` }, ['--import=tsx', 'src/server.ts'])
  t.teardown(() => { server.child.kill('SIGKILL') })
  const address = `127.0.0.1:${new URL(server.url).port}`
  const [before] = await checks(address, ['']) as [Outcome]
  t.equal(statusOf(before), Status.SERVING, 'before the signal')

  const signalled = Date.now()
  server.child.kill('SIGTERM')
  let during: Outcome[]
  do during = await checks(address, ['', 'app.auth.v1.AuthService'])
  while (during.every((o) => o.code === 'OK' && statusOf(o) === Status.SERVING) && Date.now() - signalled < delayMs / 2)
  t.same(during.map((o) => o.code), ['OK', 'OK'], 'still answering')
  t.same(during.map(statusOf), [Status.NOT_SERVING, Status.NOT_SERVING], 'NOT_SERVING while draining, for the server and its services')
  t.equal(await server.exited, 0, 'then the process exits')
})
