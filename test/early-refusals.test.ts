// An answer sent before the request's body was read reaches its client (issue 38 item 2, DECISIONS
// §17 "A refusal reaches its client"): the multipart field refusal, the quota refusal, the gate's 401
// and 429, and 413s (by Content-Length, and while streaming), each 40 times from Node's fetch
// (undici, in a process of its own so that its writes race the server's answer) and from headless
// Chromium: every try gets its documented answer, none a network error. The server reads and drops
// at most 1 MiB of a body after such an answer: a body far past that is cut, not read (HTTP/1.1 and
// HTTP/2).
import t, { type Test } from 'tap'
import http2 from 'node:http2'
import net from 'node:net'
import type { Browser, Page } from 'puppeteer-core'
import { startApp, uniqueClientIp } from './helpers/app.js'
import { signInWithCookie } from './helpers/sign-in.js'
import { runFetchTries, type TriesSpec, type TryOutcome } from './helpers/fetch-tries.js'
import { browserMissing, browserTries, launchBrowser, pageOn } from './helpers/browser.js'
import { formOf, multipartBytes, pngOfSize, SAMPLES, uploadClient } from './helpers/uploads.js'

const MiB = 1024 * 1024
const TRIES = 40
/** Each user may upload 20 times a minute (the upload tier): 40 tries rotate over two users. */
const PER_USER = 20
const QUOTA = 6 * MiB

const s = await startApp({ UPLOAD_QUOTA_BYTES: String(QUOTA) })
t.teardown(s.close)
const uploads = `${s.url}/api/uploads`

/** Who makes a batch of tries, and how many it may make within the upload tier (20 a minute, per
 *  user, or per client address when anonymous). */
interface Identity { cookie?: string, ip?: string, tries: number }

async function freshCookie (): Promise<string> {
  return (await signInWithCookie(s)).cookie
}

/** Two fresh users, 20 tries each. */
async function twoUsers (): Promise<Identity[]> {
  return await Promise.all([0, 1].map(async () => ({ cookie: await freshCookie(), tries: PER_USER })))
}

/** Three users whose quota is used up (one 6 MiB attachment each), 19 more tries each. */
async function fullUsers (): Promise<Identity[]> {
  return await Promise.all([0, 1, 2].map(async () => {
    const cookie = await freshCookie()
    const filled = await uploadClient(s).post(cookie, formOf(['type', 'attachment'], { filename: 'fill.bin', content: pngOfSize(QUOTA) }))
    if (filled.status !== 201) throw new Error(`filling the quota: ${filled.status} ${filled.body.toString()}`)
    return { cookie, tries: PER_USER - 1 }
  }))
}

/** Anonymous clients from two addresses (the test app trusts X-Forwarded-For from loopback). */
async function twoAddresses (): Promise<Identity[]> {
  return [{ ip: uniqueClientIp(), tries: PER_USER }, { ip: uniqueClientIp(), tries: PER_USER }]
}

/** A user already over the upload tier for this minute: every try is refused. */
async function limitedUser (): Promise<Identity[]> {
  const cookie = await freshCookie()
  for (let i = 0; i < PER_USER; i++) await uploadClient(s).post(cookie, formOf(['type', 'banana'], { filename: 'a.png', content: SAMPLES.png }))
  return [{ cookie, tries: TRIES }]
}

interface Case {
  name: string
  identities: () => Promise<Identity[]>
  spec: Omit<TriesSpec, 'tries' | 'headers'>
  status: number
  error: string
  check?: (body: { message: string, details?: Array<{ field: string }> }) => boolean
}

const cases: Case[] = [
  { name: 'a leading form field that fails validation (type=banana)', identities: twoUsers, spec: { url: uploads, form: { fields: [['type', 'banana']], fileBytes: 67 } }, status: 400, error: 'ValidationError', check: (b) => b.details?.[0]?.field === 'type' },
  { name: 'the quota refusal', identities: fullUsers, spec: { url: uploads, form: { fields: [['type', 'attachment']], fileBytes: 64 * 1024 } }, status: 413, error: 'QuotaExceeded' },
  { name: 'the gate\'s 401 (no session)', identities: twoAddresses, spec: { url: uploads, form: { fields: [['type', 'avatar']], fileBytes: 256 * 1024 } }, status: 401, error: 'Unauthorized' },
  { name: 'the gate\'s 429 (over the upload tier)', identities: limitedUser, spec: { url: uploads, form: { fields: [['type', 'avatar']], fileBytes: 256 * 1024 } }, status: 429, error: 'Rate limit exceeded' },
  { name: '413 by Content-Length (an avatar over 5 MiB)', identities: twoUsers, spec: { url: `${s.url}/api/users/avatar`, form: { fields: [], fileBytes: 5 * MiB + 512 * 1024 } }, status: 413, error: 'PayloadTooLarge', check: (b) => b.details?.[0]?.field === 'file' },
  { name: '413 while streaming (the file passes 5 MiB)', identities: twoUsers, spec: { url: uploads, form: { fields: [['type', 'avatar']], fileBytes: 5 * MiB + 256 * 1024 } }, status: 413, error: 'PayloadTooLarge', check: (b) => b.details?.[0]?.field === 'file' }
]

function tally (t: Test, outcomes: TryOutcome[], c: Case): void {
  const errors = outcomes.flatMap((o) => 'error' in o ? [o.error] : [])
  t.same(errors, [], 'no network error')
  const wrong = outcomes.flatMap((o) => {
    if ('error' in o) return []
    const body = JSON.parse(o.body) as { error: string, message: string, details?: Array<{ field: string }> }
    const right = o.status === c.status && body.error === c.error && typeof body.message === 'string' && (c.check?.(body) ?? true)
    return right ? [] : [`${o.status} ${o.body.slice(0, 200)}`]
  })
  t.same(wrong, [], `every answer is ${c.status} ${c.error}`)
  t.equal(outcomes.length, TRIES)
}

/** Runs the 40 tries of one case, each identity its share, with the client given (undici or the browser). */
async function tries (c: Case, run: (spec: TriesSpec, who: Identity) => Promise<TryOutcome[]>): Promise<TryOutcome[]> {
  const outcomes: TryOutcome[] = []
  for (const who of await c.identities()) {
    const count = Math.min(who.tries, TRIES - outcomes.length)
    const headers: Record<string, string> = who.ip === undefined ? {} : { 'x-forwarded-for': who.ip }
    if (count > 0) outcomes.push(...await run({ ...c.spec, tries: count, headers }, who))
  }
  return outcomes
}

t.test('Node\'s fetch (undici) gets every early answer', async (t) => {
  for (const c of cases) {
    await t.test(c.name, async (t) => {
      tally(t, await tries(c, async (spec, who) => await runFetchTries({ ...spec, headers: { ...spec.headers, ...(who.cookie === undefined ? {} : { cookie: `app_session=${who.cookie}` }) } })), c)
    })
  }
})

t.test('Chromium gets every early answer', { skip: browserMissing() }, async (t) => {
  const browser: Browser = await launchBrowser()
  t.teardown(async () => { await browser.close() })
  for (const c of cases) {
    await t.test(c.name, async (t) => {
      const pages: Page[] = []
      tally(t, await tries(c, async (spec, who) => {
        const page = await pageOn(browser, s.url, who.cookie)
        pages.push(page)
        return await browserTries(page, spec)
      }), c)
      for (const page of pages) await page.browserContext().close()
    })
  }
})

/**
 * Writes a request whose body declares `total` bytes: headers and the form's refused first field,
 * then zeros as fast as the socket takes them. Resolves with the answer's first line and how many
 * body bytes were written before the server cut the connection.
 */
async function floodAfterRefusal (cookie: string | undefined, total: number): Promise<{ statusLine: string, written: number, cut: boolean }> {
  const { body: head, contentType } = multipartBytes(['type', 'banana'])
  const opening = head.subarray(0, head.lastIndexOf('--')) // the field and the next boundary, not the end
  const url = new URL(s.url)
  return await new Promise((resolve) => {
    // Half-open allowed: like a client still sending, it writes on after the server's FIN.
    const socket = net.connect({ port: Number(url.port), host: url.hostname, allowHalfOpen: true })
    let answer = ''
    let written = 0
    let cut = false
    const chunk = Buffer.alloc(64 * 1024)
    socket.on('data', (data: Buffer) => { answer += data.toString('latin1') })
    socket.on('error', () => { cut = true })
    socket.on('close', () => { resolve({ statusLine: answer.split('\r\n')[0] ?? '', written, cut }) })
    const credential = cookie === undefined ? `X-Forwarded-For: ${uniqueClientIp()}` : `Cookie: app_session=${cookie}`
    socket.write(`POST /api/uploads HTTP/1.1\r\nHost: ${url.host}\r\n${credential}\r\nContent-Type: ${contentType}\r\nContent-Length: ${total}\r\n\r\n`)
    socket.write(opening)
    written = opening.length
    const pump = (): void => {
      while (written < total && !socket.destroyed) {
        const part = chunk.subarray(0, Math.min(chunk.length, total - written))
        const ok = socket.write(part)
        written += part.length
        if (!ok) {
          socket.once('drain', pump)
          return
        }
      }
      if (!socket.destroyed) socket.end()
    }
    pump()
  })
}

t.test('HTTP/1.1: a body far past 1 MiB after an early refusal is cut, not read', async (t) => {
  // Under the 25 MiB the route takes, so the refusals are the gate's and the form's own.
  const total = 24 * MiB
  const refusals: Array<[string, string | undefined, string]> = [
    ['the gate\'s 401 (its connection would be kept alive)', undefined, 'HTTP/1.1 401 Unauthorized'],
    ['a refused form field (its answer closes the connection)', await freshCookie(), 'HTTP/1.1 400 Bad Request']
  ]
  for (const [name, cookie, expected] of refusals) {
    const { statusLine, written, cut } = await floodAfterRefusal(cookie, total)
    t.equal(statusLine, expected, `${name}: the answer arrived first`)
    t.ok(cut, `${name}: the connection was cut`)
    // 1 MiB read by the server, plus what the loopback's socket buffers held on both sides.
    t.ok(written < 16 * MiB, `${name}: cut after ${(written / MiB).toFixed(1)} MiB of ${total / MiB} MiB`)
  }
})

t.test('HTTP/1.1: a refused body within 1 MiB is read to its end and the connection closed cleanly', async (t) => {
  const cookie = await freshCookie()
  const { statusLine, written, cut } = await floodAfterRefusal(cookie, 900 * 1024)
  t.equal(statusLine, 'HTTP/1.1 400 Bad Request')
  t.equal(written, 900 * 1024, 'the whole body was written')
  t.notOk(cut, 'no reset: the server read it all before closing')
})

t.test('HTTP/2: an early answer stands; the stream is drained up to 1 MiB, then reset with NO_ERROR', async (t) => {
  const cookie = await freshCookie()
  const session = http2.connect(s.url)
  t.teardown(() => { session.close() })
  const { body, contentType } = multipartBytes(['type', 'banana'], { filename: 'a.png', content: pngOfSize(64 * 1024) })

  async function send (extra: number): Promise<{ status: number, answer: string, rstCode: number | undefined, sent: number }> {
    const stream = session.request({ ':method': 'POST', ':path': '/api/uploads', cookie: `app_session=${cookie}`, 'content-type': contentType, 'content-length': String(body.length + extra) })
    let status = 0
    let answer = ''
    let sent = 0
    stream.on('response', (headers) => { status = Number(headers[':status']) })
    stream.on('data', (chunk: Buffer) => { answer += chunk.toString() })
    stream.on('error', () => {})
    stream.write(body.subarray(0, body.length - 4)) // all but the closing `--\r\n`: the file part is refused at once anyway
    sent = body.length - 4
    const filler = Buffer.alloc(16 * 1024)
    await new Promise<void>((resolve) => {
      const pump = (): void => {
        while (sent < body.length + extra && !stream.destroyed && !stream.closed) {
          const part = filler.subarray(0, Math.min(filler.length, body.length + extra - sent))
          sent += part.length
          if (!stream.write(part)) {
            stream.once('drain', pump)
            return
          }
        }
        if (!stream.destroyed) stream.end()
      }
      stream.on('close', () => { resolve() })
      pump()
    })
    return { status, answer, rstCode: stream.rstCode, sent }
  }

  const small = await send(256 * 1024)
  t.equal(small.status, 400)
  t.equal(JSON.parse(small.answer).error, 'ValidationError')
  const large = await send(24 * MiB)
  t.equal(large.status, 400, 'the answer to a large body stands too')
  t.equal(JSON.parse(large.answer).error, 'ValidationError')
  t.equal(large.rstCode, http2.constants.NGHTTP2_NO_ERROR, 'reset with NO_ERROR')
  t.ok(large.sent < 16 * MiB, `stopped after ${(large.sent / MiB).toFixed(1)} MiB of 24 MiB`)
})
