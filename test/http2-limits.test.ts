// HTTP/2 held to HTTP/1.1's bounds (issue 27): a request body that stops arriving is answered 408
// even while the client keeps its session busy with PINGs, a body that trickles past the whole-request
// bound likewise; a session may have 100 streams open at once; a session with nothing open gets a
// GOAWAY (PINGs do not keep it), and so does every session when the server closes, in-flight streams
// still answered. Node's own http2 client, which shows the frames (GOAWAY, RST_STREAM codes).
import t from 'tap'
import http2 from 'node:http2'
import { startApp, type TestApp } from './helpers/app.js'
import { startFakeSmtp } from './helpers/fake-smtp.js'
import { signInPerson } from './helpers/people.js'

const BODY_IDLE_MS = 1_500
const REQUEST_MS = 5_000
const KEEP_ALIVE_MS = 1_500
const HEADERS_MS = 1_000

const s = await startApp({
  HTTP_BODY_IDLE_TIMEOUT_MS: String(BODY_IDLE_MS),
  HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_MS),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: String(KEEP_ALIVE_MS),
  HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_MS)
})
t.teardown(s.close)
const person = await signInPerson(s, 'h2-limits')
const cookie = `app_session=${person.cookie}`

interface Answer { status: number, body: string, rstCode: number | undefined, afterMs: number }

/** A POST whose body is `written` and then, unless `end`, nothing more; resolves when the stream closes. */
function post (session: http2.ClientHttp2Session, path: string, written: string, options: { trickle?: boolean } = {}): { answer: Promise<Answer>, stream: http2.ClientHttp2Stream } {
  const started = Date.now()
  const stream = session.request({ ':method': 'POST', ':path': path, cookie, 'content-type': 'application/json', 'content-length': '1000' })
  stream.write(written)
  let trickle: NodeJS.Timeout | undefined
  if (options.trickle === true) trickle = setInterval(() => { if (!stream.closed) stream.write(' ') }, 300)
  const answer = new Promise<Answer>((resolve) => {
    let status = 0
    let body = ''
    stream.on('response', (headers) => { status = Number(headers[':status']) })
    stream.setEncoding('utf8')
    stream.on('data', (chunk: string) => { body += chunk })
    stream.on('error', () => {})
    stream.on('close', () => {
      clearInterval(trickle)
      resolve({ status, body, rstCode: stream.rstCode, afterMs: Date.now() - started })
    })
  })
  return { answer, stream }
}

async function get (session: http2.ClientHttp2Session, path: string): Promise<number> {
  return await new Promise((resolve, reject) => {
    const stream = session.request({ ':path': path, cookie })
    stream.on('response', (headers) => { resolve(Number(headers[':status'])) })
    stream.on('error', reject)
    stream.resume()
  })
}

function pingEvery (session: http2.ClientHttp2Session, ms: number): () => number {
  let answered = 0
  const timer = setInterval(() => { if (!session.closed && !session.destroyed) session.ping(() => { answered++ }) }, ms)
  return () => { clearInterval(timer); return answered }
}

function connect (t: { teardown: (fn: () => void) => void }, app: TestApp = s): http2.ClientHttp2Session {
  const session = http2.connect(app.url)
  session.on('error', () => {})
  t.teardown(() => { session.destroy() })
  return session
}

t.test('h2c: a body that stalls while the client sends PINGs is answered 408 after the body idle bound; the session lives on', async (t) => {
  const session = connect(t)
  const stopPinging = pingEvery(session, 200)
  const { answer } = post(session, '/api/rooms', '{"name":"half')
  const cut = await answer
  const pings = stopPinging()
  t.ok(pings >= 3, `${pings} PINGs answered while the body stalled`)
  t.equal(cut.status, 408)
  t.same(JSON.parse(cut.body), { error: 'RequestTimeout', message: 'The request body stopped arriving; send it again.' })
  t.equal(cut.rstCode, http2.constants.NGHTTP2_NO_ERROR, 'then RST_STREAM NO_ERROR: the answer stands, the client may stop sending')
  t.ok(cut.afterMs >= BODY_IDLE_MS - 100, `cut after ${cut.afterMs} ms (by the idle bound: the message says which)`)
  t.equal(await get(session, '/health'), 200, 'the session still serves')
})

t.test('h2c: a body that keeps trickling past the whole-request bound is answered 408 too', async (t) => {
  const session = connect(t)
  const { answer } = post(session, '/api/rooms', '{"name":"slow', { trickle: true })
  const cut = await answer
  t.equal(cut.status, 408)
  t.same(JSON.parse(cut.body), { error: 'RequestTimeout', message: 'The request did not arrive in time; send it again.' })
  t.ok(cut.afterMs >= REQUEST_MS - 100, `cut after ${cut.afterMs} ms`)
})

t.test('h2c: a session may have 100 streams open; the next waits for one of them to end', async (t) => {
  const session = connect(t)
  const settings = await new Promise<http2.Settings>((resolve) => session.once('remoteSettings', resolve))
  t.equal(settings.maxConcurrentStreams, 100, 'the server says so in its SETTINGS')
  const ended: string[] = []
  // Ping (public, the `standard` tier's 200 a minute) rather than a write, whose tier would refuse some first.
  const stalled = Array.from({ length: 100 }, async (_, i) => {
    const { answer } = post(session, '/rpc/app.auth.v1.AuthService/Ping', `{"message":"stalled ${i}`)
    const cut = await answer
    ended.push('stalled')
    return cut.status
  })
  // Given a moment, the 100 streams are open on the server; the 101st is held by the client until one closes.
  await new Promise((resolve) => setTimeout(resolve, 200))
  const health = get(session, '/health').then((status) => { ended.push('health'); return status })
  t.same(new Set(await Promise.all(stalled)), new Set([408]))
  t.equal(await health, 200)
  t.not(ended[0], 'health', 'the 101st stream was answered only after one of the first 100 ended')
})

t.test('h2c: a session with no open stream gets a GOAWAY after the keep-alive bound, PINGs notwithstanding', async (t) => {
  const session = connect(t)
  t.equal(await get(session, '/health'), 200)
  const started = Date.now()
  const stopPinging = pingEvery(session, 200)
  const goaway = await new Promise<number>((resolve) => session.once('goaway', resolve))
  const pings = stopPinging()
  t.equal(goaway, http2.constants.NGHTTP2_NO_ERROR, 'GOAWAY NO_ERROR, not a dropped connection')
  t.ok(pings >= 3, `${pings} PINGs answered meanwhile`)
  t.ok(Date.now() - started >= KEEP_ALIVE_MS - 100, `after ${Date.now() - started} ms`)
  await new Promise((resolve) => session.once('close', resolve))
})

t.test('h2c: a session that never opens a stream gets its GOAWAY after the headers bound', async (t) => {
  const session = connect(t)
  const started = Date.now()
  t.equal(await new Promise<number>((resolve) => session.once('goaway', resolve)), http2.constants.NGHTTP2_NO_ERROR)
  t.ok(Date.now() - started >= HEADERS_MS - 100 && Date.now() - started < KEEP_ALIVE_MS + 1_000, `after ${Date.now() - started} ms`)
})

t.test('close: sessions get a GOAWAY; a stream in flight is still answered, and one sent before the notice too', async (t) => {
  const smtp = await startFakeSmtp({ accept: true, delayMs: 1_000 })
  t.teardown(smtp.close)
  const closing = await startApp({ SMTP_URL: smtp.url })
  t.teardown(closing.close)
  const session = connect(t, closing)
  const goaways: number[] = []
  session.on('goaway', (_code, lastStreamId) => { goaways.push(lastStreamId) })
  const login = (email: string): Promise<Answer> => {
    const started = Date.now()
    const stream = session.request({ ':method': 'POST', ':path': '/api/auth/request-login', 'content-type': 'application/json', 'x-forwarded-for': '10.6.0.1' })
    stream.end(JSON.stringify({ email }))
    return new Promise((resolve) => {
      let status = 0
      stream.on('response', (headers) => { status = Number(headers[':status']) })
      stream.on('error', () => {})
      stream.resume()
      stream.on('close', () => { resolve({ status, body: '', rstCode: stream.rstCode, afterMs: Date.now() - started }) })
    })
  }
  const inFlight = login('in-flight@example.test')
  while (smtp.received.length < 1) await new Promise((resolve) => setTimeout(resolve, 20))
  const justBefore = login('just-before@example.test')
  const closed = closing.app.close()
  t.equal((await inFlight).status, 200, 'the stream in flight was answered')
  t.equal((await justBefore).status, 200, 'and the one sent just before the close')
  await closed
  t.equal(goaways[0], 2 ** 31 - 1, 'first a GOAWAY notice (open no more streams)')
  t.ok(goaways.length >= 2 && goaways.at(-1)! >= 1 && goaways.at(-1)! < 2 ** 31 - 1, `then the final GOAWAY naming the last stream processed (${goaways.join(', ')})`)
})
