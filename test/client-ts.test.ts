// The TypeScript client of clients/ts/ (Connect-ES, the project's generated stubs), run as a process
// of its own against a running service, as a client author would run it: over gRPC (h2c) and the
// Connect protocol, under /rpc and at the standard paths, it checks health, lists the services by
// reflection, signs in by magic link (read from the outbox folder) and poll, creates and lists
// rooms, and decodes a refusal's google.rpc.BadRequest details. It is type-checked with the project.
import t from 'tap'
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { Summary } from '../clients/ts/client.js'
import { GRPC_SERVICES, RPC_SERVICES } from '../src/rpc/index.js'
import { startApp, uniqueEmail } from './helpers/app.js'

const app = await startApp()
t.teardown(app.close)

t.test('clients/ts/client.ts: every transport, both paths', async (t) => {
  const email = uniqueEmail('ts-client')
  // Asynchronous: the service runs in this process.
  const { stdout } = await promisify(execFile)(process.execPath, ['--import=tsx', join(import.meta.dirname, '..', 'clients', 'ts', 'client.ts'),
    '--url', app.url, '--email', email, '--outbox', join(app.config.dataDir, 'outbox')], { timeout: 120_000, encoding: 'utf8' })
  const summary = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as Summary
  t.equal(summary.email, email)
  t.same(summary.runs.map((r) => r.transport), ['gRPC /rpc', 'gRPC standard paths', 'Connect /rpc', 'Connect standard paths'])
  const served = [...RPC_SERVICES, ...GRPC_SERVICES].map((s) => s.typeName).sort()
  for (const run of summary.runs) {
    t.equal(run.health, 'SERVING', `${run.transport}: health`)
    if (run.transport.startsWith('gRPC')) t.same(run.services, served, `${run.transport}: reflection lists every service`)
    t.match(run.roomId, /^room_/, `${run.transport}: created a room`)
    t.ok(run.listedCreatedRoom, `${run.transport}: and listed it`)
    t.same(run.refusal, { code: 'InvalidArgument', message: 'Invalid input: Room name must be between 1 and 100 characters', violations: [{ field: 'name', description: 'Room name must be between 1 and 100 characters' }] }, `${run.transport}: the refusal with its BadRequest`)
  }
})
