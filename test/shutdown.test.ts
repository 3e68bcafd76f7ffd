// SIGTERM where a client can lose what it sent (issue 27): requests written on fresh connections just
// before the signal (still in the listen backlog, or accepted but not read) are all answered;
// SHUTDOWN_DELAY_MS keeps serving while /health says draining; and HTTP/2 clients that leave with
// streams in flight do not take the process down while it logs at info. The server runs from its
// TypeScript source (tsx), so this file needs no build and can run beside test/process.test.ts,
// which runs the built one.
import t from 'tap'
import http2 from 'node:http2'
import net from 'node:net'
import { startServer as startBuiltOrSource, type ServerProcess } from './helpers/server-process.js'

const startServer = async (extra: NodeJS.ProcessEnv): Promise<ServerProcess> => await startBuiltOrSource(extra, ['--import=tsx', 'src/server.ts'])

// One server for both (a process start is slow on a busy machine): first the clients that leave, then the signal.
t.test('HTTP/2 clients that leave with streams in flight do not take the process down (logs at info); then SIGTERM 5 ms after 20 requests were written on fresh connections: every one is answered, none reset', async (t) => {
  const { child, url, exited } = await startServer({ TRUST_PROXY: '127.0.0.1' })
  const { port } = new URL(url)
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  // Each round: sessions with 50 streams each, dropped a little later every time, so some streams are
  // dropped before they are logged, some while the admission gate counts them, some while answering.
  for (let round = 0; round < 10; round++) {
    const sessions = Array.from({ length: 5 }, () => {
      const session = http2.connect(url)
      session.on('error', () => {})
      for (let i = 0; i < 50; i++) session.request({ ':path': '/health' }).on('error', () => {})
      return session
    })
    await new Promise((resolve) => setTimeout(resolve, 20 + round * 10))
    for (const session of sessions) session.destroy()
  }
  const health = await fetch(`${url}/health`)
  t.equal(health.status, 200, 'still serving')
  t.notMatch(stderr, /TypeError/, 'nothing thrown')

  // Each on a connection of its own, opened just now: at the signal some are still in the listen
  // backlog, some accepted but not yet read.
  const written: Array<Promise<void>> = []
  const answers = Array.from({ length: 20 }, async (_, i) => await new Promise<RawAnswer>((resolve) => {
    const socket = net.connect(Number(port), '127.0.0.1')
    const body = JSON.stringify({ email: `fresh-${i}@example.test` })
    written.push(new Promise((resolve) => socket.once('connect', () => {
      socket.write(`POST /api/auth/request-login HTTP/1.1\r\nHost: localhost\r\nX-Forwarded-For: 10.8.0.${i + 1}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`, () => { resolve() })
    })))
    readRawAnswer(socket, resolve)
  }))
  await Promise.all(written)
  await new Promise((resolve) => setTimeout(resolve, 5))
  child.kill('SIGTERM')
  const outcomes = await Promise.all(answers)
  t.same(outcomes.map((o) => o.error ?? o.status), outcomes.map(() => 200), 'all 20 answered 200, none reset')
  t.ok(outcomes.every((o) => o.complete), 'each answer whole (its Content-Length of body)')
  t.comment(`${outcomes.filter((o) => o.headers.connection === 'close').length} of 20 answered with Connection: close (those read after the signal)`)
  t.equal(await exited, 0, 'exit code 0')
})

t.test('SHUTDOWN_DELAY_MS: from the signal /health says draining while requests are still served; then the listener closes', async (t) => {
  const delayMs = 2_000
  const { child, url, exited } = await startServer({ SHUTDOWN_DELAY_MS: String(delayMs), TRUST_PROXY: '127.0.0.1' })
  const before = await fetch(`${url}/health`)
  t.equal(before.status, 200)
  const signalled = Date.now()
  child.kill('SIGTERM')
  // The signal reaches the process at once; its handler runs on the next turn of its event loop.
  let health: Response
  do health = await fetch(`${url}/health`)
  while (health.status === 200 && Date.now() - signalled < delayMs / 2)
  t.equal(health.status, 503, '/health: 503')
  t.equal((await health.json() as { status: string }).status, 'draining')
  const served = await fetch(`${url}/api/auth/request-login`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': '10.7.0.1' }, body: JSON.stringify({ email: 'during-delay@example.test' }) })
  t.equal(served.status, 200, 'a request on a new connection during the delay is served')
  t.ok(Date.now() - signalled < delayMs, 'all that within the delay')
  t.equal(await exited, 0, 'exit code 0')
  const exitedAfter = Date.now() - signalled
  t.ok(exitedAfter >= delayMs && exitedAfter < delayMs + 10_000, `exited ${exitedAfter} ms after SIGTERM (delay ${delayMs} ms)`)
  await t.rejects(fetch(`${url}/health`), 'the listener is closed')
})

interface RawAnswer { status: number, headers: Record<string, string>, complete: boolean, error?: string }

/** What the server answered on `socket` before the connection closed. */
function readRawAnswer (socket: net.Socket, resolve: (answer: RawAnswer) => void): void {
  let raw = ''
  let error: string | undefined
  socket.setEncoding('utf8')
  socket.on('data', (chunk: string) => { raw += chunk })
  socket.on('error', (e: NodeJS.ErrnoException) => { error = e.code ?? e.message })
  socket.on('close', () => {
    const [head = '', body = ''] = raw.split('\r\n\r\n')
    const [statusLine = '', ...lines] = head.split('\r\n')
    const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]))
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1] ?? 0)
    resolve({ status, headers, complete: status !== 0 && Buffer.byteLength(body) === Number(headers['content-length']), ...(status === 0 ? { error: error ?? 'closed without an answer' } : {}) })
  })
}
