// The process as operators run it: `npm run migrate` (which builds `dist/` first, as `npm start`
// does), the built server `node dist/server.js`, and a graceful SIGTERM.
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
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

t.test('SIGTERM: in-flight requests finish, then the process exits 0', async (t) => {
  // A slow mail server holds the sign-in request inside its handler while the signal arrives.
  const smtp = await startFakeSmtp({ accept: true, delayMs: 500 })
  t.teardown(smtp.close)
  // Built by `npm run migrate` above.
  const child = spawn(process.execPath, ['--enable-source-maps', 'dist/server.js'], { env: { ...env(), SMTP_URL: smtp.url }, stdio: ['ignore', 'pipe', 'pipe'] })
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
  const inFlight = fetch(`${url}/api/auth/request-login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'shutdown@example.test' }) })
  await smtp.connected
  child.kill('SIGTERM')
  const response = await inFlight
  t.equal(response.status, 200, 'the request in flight was answered')
  t.equal(await exited, 0)
  await t.rejects(fetch(`${url}/health`), 'no longer accepting connections')
})
