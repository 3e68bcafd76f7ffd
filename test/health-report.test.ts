// The health report's timing (issue 17 item 2): a part's probe that answered while the event loop
// was blocked counts as healthy. Only a part that really does not answer within the probe timeout is
// reported unhealthy, so a load balancer never pulls an instance that was merely busy.
import t from 'tap'
import { spawn } from 'node:child_process'
import net from 'node:net'
import { healthReport } from '../src/core/health.js'

/** An echo server in a process of its own: it answers while this process's event loop is blocked. */
async function echoServer (): Promise<{ port: number, close (): void }> {
  const child = spawn(process.execPath, ['-e', `
    const server = require('node:net').createServer((socket) => socket.on('data', (chunk) => socket.write(chunk)))
    server.listen(0, '127.0.0.1', () => console.log(server.address().port))`], { stdio: ['ignore', 'pipe', 'inherit'] })
  const port = await new Promise<number>((resolve) => { child.stdout.once('data', (chunk: Buffer) => { resolve(Number(chunk.toString().trim())) }) })
  return { port, close: () => { child.kill() } }
}

function roundTrip (port: number, sent: () => void): Promise<'healthy'> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => { socket.write('ping'); sent() })
    socket.once('data', () => { socket.destroy(); resolve('healthy') })
    socket.once('error', reject)
  })
}

function blockFor (ms: number): void {
  const until = Date.now() + ms
  while (Date.now() < until) { /* the event loop is stuck, as under a CPU-bound request */ }
}

t.test('a reply that arrived while the event loop was blocked past the probe timeout counts', async (t) => {
  const echo = await echoServer()
  t.teardown(echo.close)
  let markSent!: () => void
  const sent = new Promise<void>((resolve) => { markSent = resolve })
  const report = healthReport({ database: { essential: true, check: async () => await roundTrip(echo.port, markSent) } }, new Date())
  await sent
  blockFor(2_300) // past the 2 s probe timeout; the echo's reply waits in the socket meanwhile
  const result = await report
  t.equal(result.services.database?.status, 'healthy')
  t.equal(result.status, 'healthy')
})

t.test('a part that does not answer is unhealthy after the probe timeout', async (t) => {
  const started = Date.now()
  const result = await healthReport({ database: { essential: true, check: async () => await new Promise<'healthy'>(() => {}) } }, new Date())
  t.equal(result.services.database?.status, 'unhealthy')
  t.equal(result.status, 'unhealthy')
  t.ok(Date.now() - started >= 1_900, 'after the timeout, not before')
})
