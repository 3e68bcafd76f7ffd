// The process as operators run it: `npm run migrate` (which builds `dist/` first, as `npm start`
// does), the built server `node dist/src/server.js`, and a graceful SIGTERM.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import http from 'node:http'
import { join } from 'node:path'
import { createClient, type Interceptor, type Transport } from '@connectrpc/connect'
import { createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node'
import { AuthService } from '../src/gen/app/auth/v1/auth_pb.js'
import { pdfBomb, postCv, warmCvParser } from './helpers/cv-files.js'
import { startFakeSmtp } from './helpers/fake-smtp.js'
import { migratedDataDir } from './helpers/database-template.js'
import { temporaryDir } from './helpers/temp-dirs.js'
import { serverEnv as env, startServer } from './helpers/server-process.js'

t.test('npm run migrate builds, applies the migrations and exits', async (t) => {
  // A DATA_DIR with nothing in it yet: every migration runs.
  const result = spawnSync('npm', ['run', '--silent', 'migrate'], { env: { ...env(), DATA_DIR: temporaryDir('canvas-process-') }, encoding: 'utf8', timeout: 150_000 })
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

t.test('the built server reads CVs in its memory-capped parser process (dist/src/compute/cv.process.js) and refuses a bomb', async (t) => {
  const dataDir = migratedDataDir('canvas-process-')
  const { child, url, exited } = await startServer({ DATA_DIR: dataDir })
  t.teardown(async () => { child.kill('SIGTERM'); await exited })
  // Without SMTP_URL the sign-in link is written to DATA_DIR/outbox.
  await fetch(`${url}/api/auth/request-login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'dist-cv@example.test' }) })
  const outbox = join(dataDir, 'outbox')
  const mail = readdirSync(outbox).map((f) => readFileSync(join(outbox, f), 'utf8')).join('\n')
  const signedIn = await fetch(`${url}/api/auth/authorize?token=${/token=([A-Za-z0-9_-]+)/.exec(mail)?.[1] ?? ''}`, { redirect: 'manual' })
  const cookie = /app_session=([^;]+)/.exec(signedIn.headers.get('set-cookie') ?? '')?.[1] ?? ''
  await warmCvParser(url, cookie)
  const parsed = await postCv(url, cookie, Buffer.from('Jane Doe\nSkills\nTypeScript, Go\n'))
  t.equal(parsed.status, 200)
  t.same(parsed.body.data?.skills, ['TypeScript', 'Go'])
  const bomb = await postCv(url, cookie, pdfBomb(1024))
  t.equal(bomb.status, 400)
  // Refused by the memory cap — or, on a machine crowded by other test files, by the parse's 10 s
  // limit first (the bomb's memory is still the child's, never this server's).
  t.match(bomb.body, { error: 'UnreadableFile', message: /^file: (needs more than the 256 MiB of memory|could not be read within 10 s)/ })
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

function fromAddress (ip: string): Interceptor {
  return (next) => async (request) => {
    request.header.set('x-forwarded-for', ip)
    return await next(request)
  }
}
