// `npx tsx bench/shutdown.ts` (issue 27): what SIGTERM costs and what it answers, measured on the
// built server as `npm start` runs it (`node dist/src/server.js`, logs at info, read and dropped).
// Per round, for this build and (with BENCH_BASELINE_ROOT=<another checkout, built>) that one, the
// two going first in turn:
//   - in flight: 50 sign-in requests (25 over HTTP/1.1, 25 streams on one h2c session) held inside
//     their handler by a mail server that answers after BENCH_MAIL_DELAY_MS (500); SIGTERM once all 50
//     reached it. Prints the time from the signal to the exit, from the last answer to the exit, and
//     how many of the 50 were answered.
//   - fresh connections: 20 requests written on 20 new connections, SIGTERM 5 ms later; how many were
//     answered, how many reset.
// BENCH_ROUNDS (5). DATABASE_URL / REDIS_URL as usual (unset: embedded PGlite, memory counters).
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import http2 from 'node:http2'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startFakeSmtp, type FakeSmtp } from '../test/helpers/fake-smtp.js'
import { BENCH_JWT_SECRET, buildDist, builtModule, reapOnExit } from './harness.js'

const rounds = Number(process.env.BENCH_ROUNDS ?? 5)
const mailDelayMs = Number(process.env.BENCH_MAIL_DELAY_MS ?? 500)
const root = join(import.meta.dirname, '..')
const baselineRoot = process.env.BENCH_BASELINE_ROOT
buildDist()

interface Server { child: ChildProcessWithoutNullStreams, url: string, exited: Promise<number> }

async function start (checkout: string, env: Record<string, string>): Promise<Server> {
  const child = reapOnExit(spawn(process.execPath, [builtModule(checkout, 'server.js')], {
    env: { ...process.env, NODE_ENV: 'production', JWT_SECRET: BENCH_JWT_SECRET, DATA_DIR: mkdtempSync(join(tmpdir(), 'canvas-bench-shutdown-')), HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', TRUST_PROXY: '127.0.0.1', ...env }
  }))
  const url = await new Promise<string>((resolve, reject) => {
    let out = ''
    child.stdout.on('data', function listening (chunk: Buffer) {
      out += chunk.toString()
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out)
      if (match?.[1] === undefined) return
      child.stdout.off('data', listening).resume()
      resolve(match[1])
    })
    child.once('exit', (code) => { reject(new Error(`exited early with ${String(code)}`)) })
  })
  child.stderr.resume()
  const exited = new Promise<number>((resolve) => child.once('exit', () => { resolve(Date.now()) }))
  return { child, url, exited }
}

const signIn = (i: number): { body: string, ip: string } => ({ body: JSON.stringify({ email: `shutdown-${i}-${Date.now()}@example.test` }), ip: `10.5.${Math.floor(i / 250)}.${1 + (i % 250)}` })

/** Resolves with the time the answer ended (or NaN when there was none). */
async function overHttp1 (url: string, i: number): Promise<number> {
  const { body, ip } = signIn(i)
  try {
    const answer = await fetch(`${url}/api/auth/request-login`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': ip }, body })
    await answer.arrayBuffer()
    return answer.status === 200 ? Date.now() : NaN
  } catch {
    return NaN
  }
}

async function overH2c (session: http2.ClientHttp2Session, i: number): Promise<number> {
  const { body, ip } = signIn(i)
  return await new Promise((resolve) => {
    const stream = session.request({ ':method': 'POST', ':path': '/api/auth/request-login', 'content-type': 'application/json', 'x-forwarded-for': ip })
    let status = 0
    stream.on('response', (headers) => { status = Number(headers[':status']) })
    stream.on('error', () => { resolve(NaN) })
    stream.on('end', () => { resolve(status === 200 ? Date.now() : NaN) })
    stream.resume()
    stream.end(body)
  })
}

interface InFlight { toExitMs: number, lastAnswerToExitMs: number, answered: number }

async function inFlight (checkout: string, smtp: FakeSmtp): Promise<InFlight> {
  const server = await start(checkout, { SMTP_URL: smtp.url })
  const session = http2.connect(server.url)
  session.on('error', () => {})
  const seen = smtp.received.length
  const calls = [
    ...Array.from({ length: 25 }, async (_, i) => await overHttp1(server.url, i)),
    ...Array.from({ length: 25 }, async (_, i) => await overH2c(session, 100 + i))
  ]
  while (smtp.received.length < seen + 50) await new Promise((resolve) => setTimeout(resolve, 10))
  const signalled = Date.now()
  server.child.kill('SIGTERM')
  const answers = await Promise.all(calls)
  const exitedAt = await server.exited
  session.destroy()
  const answered = answers.filter((at) => !Number.isNaN(at))
  return { toExitMs: exitedAt - signalled, lastAnswerToExitMs: exitedAt - Math.max(...answered), answered: answered.length }
}

interface Fresh { answered: number, reset: number }

async function freshConnections (checkout: string): Promise<Fresh> {
  const server = await start(checkout, {})
  const { port } = new URL(server.url)
  const written: Array<Promise<void>> = []
  const outcomes = Array.from({ length: 20 }, async (_, i) => await new Promise<'answered' | 'reset'>((resolve) => {
    const { body, ip } = signIn(1000 + i)
    const socket = net.connect(Number(port), '127.0.0.1')
    let answer = ''
    written.push(new Promise((resolve) => socket.once('connect', () => {
      socket.write(`POST /api/auth/request-login HTTP/1.1\r\nHost: localhost\r\nX-Forwarded-For: ${ip}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`, () => { resolve() })
    })))
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => { answer += chunk })
    socket.on('error', () => {})
    socket.on('close', () => { resolve(answer.startsWith('HTTP/1.1 200') ? 'answered' : 'reset') })
  }))
  await Promise.all(written)
  await new Promise((resolve) => setTimeout(resolve, 5))
  server.child.kill('SIGTERM')
  const all = await Promise.all(outcomes)
  await server.exited
  return { answered: all.filter((o) => o === 'answered').length, reset: all.filter((o) => o === 'reset').length }
}

const smtp = await startFakeSmtp({ accept: true, delayMs: mailDelayMs })
const builds: Array<[string, string]> = [['this', root]]
if (baselineRoot !== undefined) builds.push(['baseline', baselineRoot])
const results = new Map<string, { inFlight: InFlight[], fresh: Fresh[] }>(builds.map(([name]) => [name, { inFlight: [], fresh: [] }]))
for (let round = 1; round <= rounds; round++) {
  console.log(`round ${round} of ${rounds}`)
  for (const [name, checkout] of round % 2 === 1 ? builds : [...builds].reverse()) {
    const result = results.get(name)!
    result.inFlight.push(await inFlight(checkout, smtp))
    result.fresh.push(await freshConnections(checkout))
  }
}
await smtp.close()

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN
const spread = (values: number[]): string => `median ${median(values).toFixed(0)}, min ${Math.min(...values).toFixed(0)}, max ${Math.max(...values).toFixed(0)}`
console.log(`\nnode ${process.version}; database: ${process.env.DATABASE_URL === undefined ? 'PGlite (embedded)' : 'Postgres'}, cache: ${process.env.REDIS_URL === undefined ? 'memory' : 'Redis'}; logs: info; ${rounds} rounds; mail answered after ${mailDelayMs} ms`)
for (const [name] of builds) {
  const { inFlight, fresh } = results.get(name)!
  console.log(`${name}: 50 in flight: SIGTERM → exit ${spread(inFlight.map((r) => r.toExitMs))} ms; last answer → exit ${spread(inFlight.map((r) => r.lastAnswerToExitMs))} ms; answered ${inFlight.map((r) => r.answered).join(', ')} of 50`)
  console.log(`${name}: 20 on fresh connections 5 ms before SIGTERM: answered ${fresh.map((r) => r.answered).join(', ')}; reset ${fresh.map((r) => r.reset).join(', ')}`)
}
