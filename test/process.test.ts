// The process as operators run it: `npm run migrate` (which builds `dist/` first, as `npm start`
// does), the built server `node dist/src/server.js`, and a graceful SIGTERM.
import t from 'tap'
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process'
import http from 'node:http'
import http2 from 'node:http2'
import net from 'node:net'
import { createClient, type Interceptor, type Transport } from '@connectrpc/connect'
import { createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node'
import { AuthService } from '../src/gen/app/auth/v1/auth_pb.js'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startFakeSmtp } from './helpers/fake-smtp.js'

const env = (): NodeJS.ProcessEnv => ({
  ...process.env,
  DATA_DIR: mkdtempSync(join(tmpdir(), 'canvas-process-')),
  LOG_LEVEL: 'info',
  HOST: '127.0.0.1',
  PORT: '0'
})

t.test('npm run migrate builds, applies the migrations and exits', async (t) => {
  const result = spawnSync('npm', ['run', '--silent', 'migrate'], { env: env(), encoding: 'utf8', timeout: 150_000 })
  t.equal(result.status, 0, result.stderr)
  t.match(result.stdout, /migrations applied \((pglite|postgres)\)/)
})

t.test('a bad TRUST_PROXY stops the process at start, naming the variable', async (t) => {
  for (const value of ['10.0.0.0/40', '999.1.1.1']) {
    const result = spawnSync(process.execPath, ['dist/src/server.js'], { env: { ...env(), TRUST_PROXY: value }, encoding: 'utf8', timeout: 30_000 })
    t.equal(result.status, 1, value)
    t.match(result.stderr, /Invalid configuration: TRUST_PROXY/)
  }
})

t.test('SIGTERM: every request in flight is answered (REST, Connect, gRPC over HTTP/2), idle connections close, exit 0 within 10 s', async (t) => {
  // A slow mail server holds every sign-in request inside its handler while the signal arrives.
  const smtp = await startFakeSmtp({ accept: true, delayMs: 1_500 })
  t.teardown(smtp.close)
  const { child, url, exited } = await startServer({ SMTP_URL: smtp.url, TRUST_PROXY: '127.0.0.1' })

  // An idle keep-alive connection: the server must close it rather than wait for it.
  const agent = new http.Agent({ keepAlive: true })
  await new Promise<void>((resolve, reject) => {
    http.get(`${url}/health`, { agent }, (response) => { response.resume(); response.on('end', resolve) }).on('error', reject)
  })

  const address = (i: number): string => `10.9.${Math.floor(i / 250)}.${1 + (i % 250)}`
  const rest = Array.from({ length: 30 }, async (_, i) => await fetch(`${url}/api/auth/request-login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': address(i) },
    body: JSON.stringify({ email: `in-flight-${i}@example.test` })
  }))
  const viaRpc = (transport: Transport, i: number): Promise<unknown> => createClient(AuthService, transport).requestLogin({ email: `rpc-in-flight-${i}@example.test` })
  const connectJson = Array.from({ length: 10 }, async (_, i) => await viaRpc(createConnectTransport({ baseUrl: `${url}/rpc`, httpVersion: '1.1', interceptors: [fromAddress(address(100 + i))] }), i))
  const grpcH2 = Array.from({ length: 10 }, async (_, i) => await viaRpc(createGrpcTransport({ baseUrl: `${url}/rpc`, interceptors: [fromAddress(address(200 + i))] }), 100 + i))

  // Every one of the 50 is inside its handler (its message reached the mail server) before the signal.
  while (smtp.received.length < 50) await new Promise((resolve) => setTimeout(resolve, 20))
  const signalled = Date.now()
  child.kill('SIGTERM')

  const answers = await Promise.all(rest)
  t.same(answers.map((a) => a.status), answers.map(() => 200), 'every REST request in flight was answered 200')
  t.ok(answers.every((a) => a.headers.get('connection') === 'close'), 'and told to close its connection')
  const rpcAnswers = await Promise.allSettled([...connectJson, ...grpcH2])
  t.same(rpcAnswers.map((a) => a.status), rpcAnswers.map(() => 'fulfilled'), 'every RPC call in flight (Connect over HTTP/1.1, gRPC over HTTP/2) was answered')
  t.equal(await exited, 0, 'exit code 0')
  t.ok(Date.now() - signalled < 10_000, `exited ${Date.now() - signalled} ms after SIGTERM`)
  agent.destroy()
  await t.rejects(fetch(`${url}/health`), 'no longer accepting connections')
})

t.test('SIGTERM under steady keep-alive load: no request sent before the signal is reset or refused', async (t) => {
  const { child, url, exited } = await startServer({})
  const agent = new http.Agent({ keepAlive: true, maxSockets: 20 })
  const outcomes: Array<{ sentAt: number, status: number | string }> = []
  const stop = new AbortController()
  const one = async (): Promise<void> => {
    const sentAt = Date.now()
    const status = await new Promise<number | string>((resolve) => {
      http.get(`${url}/health`, { agent }, (response) => {
        let body = ''
        response.setEncoding('utf8')
        response.on('data', (chunk: string) => { body += chunk })
        // From the signal on, health answers 503 `draining`: an answer all the same.
        response.on('end', () => { resolve(response.statusCode === 503 && JSON.parse(body).status === 'draining' ? 200 : response.statusCode ?? 0) })
        response.on('error', (error: NodeJS.ErrnoException) => { resolve(error.code ?? 'error') })
      }).on('error', (error: NodeJS.ErrnoException) => { resolve(error.code ?? 'error') })
    })
    outcomes.push({ sentAt, status })
  }
  const workers = Array.from({ length: 20 }, async () => { while (!stop.signal.aborted) await one() })
  await new Promise((resolve) => setTimeout(resolve, 1_000))
  const signalled = Date.now()
  child.kill('SIGTERM')
  t.equal(await exited, 0, 'exit code 0')
  t.ok(Date.now() - signalled < 10_000, `exited ${Date.now() - signalled} ms after SIGTERM`)
  stop.abort()
  await Promise.all(workers)
  agent.destroy()
  const before = outcomes.filter((o) => o.sentAt < signalled)
  const failed = before.filter((o) => o.status !== 200)
  t.ok(before.length > 100, `${before.length} requests sent before the signal`)
  t.same(failed, [], 'each of them answered 200 (or, after the signal, 503 draining)')
})

t.test('SIGTERM 5 ms after 20 requests were written on fresh connections: every one is answered, none reset', async (t) => {
  const { child, url, exited } = await startServer({ TRUST_PROXY: '127.0.0.1' })
  const { port } = new URL(url)
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

t.test('HTTP/2 clients that leave while their streams are being handled do not take the process down (logs at info)', async (t) => {
  const { child, url, exited } = await startServer({})
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
  child.kill('SIGTERM')
  t.equal(await exited, 0)
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

function fromAddress (ip: string): Interceptor {
  return (next) => async (request) => {
    request.header.set('x-forwarded-for', ip)
    return await next(request)
  }
}

/** The built server (`npm run migrate` above built dist/), once it listens. */
async function startServer (extra: NodeJS.ProcessEnv): Promise<{ child: ChildProcessWithoutNullStreams, url: string, exited: Promise<number | null> }> {
  const child = spawn(process.execPath, ['--enable-source-maps', 'dist/src/server.js'], { env: { ...env(), ...extra } })
  const url = await new Promise<string>((resolve, reject) => {
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out)
      if (match?.[1] !== undefined) resolve(match[1])
    })
    child.on('exit', (code) => { reject(new Error(`exited early with ${String(code)}`)) })
  })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => { resolve(code) }))
  return { child, url, exited }
}
