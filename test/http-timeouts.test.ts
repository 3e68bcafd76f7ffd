// Slow clients (issue 17 item 3): a request stalled in its body or its headers is cut off with 408 in
// the REST envelope within the configured bound, a silent connection is dropped, while an event
// stream, which must stay open, is unaffected. Raw sockets, so the client can stall on purpose.
import t from 'tap'
import net from 'node:net'
import { startApp } from './helpers/app.js'
import { openStream } from './helpers/sse.js'
import { signInPerson } from './helpers/people.js'

const REQUEST_TIMEOUT_MS = 1_500
const HEADERS_TIMEOUT_MS = 1_000

const s = await startApp({
  HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
  HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
  SSE_HEARTBEAT_MS: '300'
})
t.teardown(s.close)
const { port } = new URL(s.url)
const person = await signInPerson(s, 'slow')

interface Cut { answer: string, afterMs: number }

/** Writes `bytes`, then sends nothing more; resolves with what the server answered once it closed. */
async function stallAfter (bytes: string): Promise<Cut> {
  return await new Promise((resolve, reject) => {
    const started = Date.now()
    const socket = net.connect(Number(port), '127.0.0.1', () => { socket.write(bytes) })
    let answer = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => { answer += chunk })
    socket.on('error', () => {})
    socket.on('close', () => { resolve({ answer, afterMs: Date.now() - started }) })
    setTimeout(() => { socket.destroy(); reject(new Error('the server kept the stalled connection open')) }, 15_000)
  })
}

function statusAndBody (answer: string): { status: number, body: unknown } {
  const [head = '', body = ''] = answer.split('\r\n\r\n')
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), body: body === '' ? undefined : JSON.parse(body) }
}

t.test('a body that stalls is answered 408 within the request timeout; an open event stream is not touched', async (t) => {
  const stream = await openStream(s.url, { cookie: person.cookie })
  t.teardown(() => { stream.close() })
  const headers = `POST /api/rooms HTTP/1.1\r\nHost: localhost\r\nCookie: app_session=${person.cookie}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n`
  const cut = await stallAfter(headers + '{"name":"half')
  const { status, body } = statusAndBody(cut.answer)
  t.equal(status, 408)
  t.same(body, { error: 'RequestTimeout', message: 'The request did not arrive in time; send it again.' })
  t.ok(cut.afterMs >= REQUEST_TIMEOUT_MS - 100 && cut.afterMs < REQUEST_TIMEOUT_MS + 2_500, `cut after ${cut.afterMs} ms`)

  // The stream outlived the bound several times over and still delivers heartbeats and events.
  await new Promise((resolve) => setTimeout(resolve, REQUEST_TIMEOUT_MS))
  const heartbeats = stream.messages.filter((m) => m.event === 'heartbeat').length
  t.ok(heartbeats >= 5, `${heartbeats} heartbeats while the stalled request was cut`)
  const created = await fetch(`${s.url}/api/rooms`, { method: 'POST', headers: { cookie: `app_session=${person.cookie}`, 'content-type': 'application/json' }, body: '{"name":"after the stall"}' })
  t.equal(created.status, 201)
  const event = await stream.waitFor((m) => m.json.type === 'room:created')
  t.equal(event.json.payload?.name, 'after the stall')
})

t.test('headers that stall are answered 408 within the headers timeout', async (t) => {
  const cut = await stallAfter('GET /health HTTP/1.1\r\nHost: local')
  t.equal(statusAndBody(cut.answer).status, 408)
  t.ok(cut.afterMs < HEADERS_TIMEOUT_MS + 2_500, `cut after ${cut.afterMs} ms`)
})

t.test('a connection that never sends a byte is dropped after the headers timeout', async (t) => {
  const cut = await stallAfter('')
  t.equal(cut.answer, '')
  t.ok(cut.afterMs >= HEADERS_TIMEOUT_MS - 100 && cut.afterMs < HEADERS_TIMEOUT_MS + 2_500, `dropped after ${cut.afterMs} ms`)
})

t.test('bytes that are not HTTP get 400 in the envelope', async (t) => {
  const cut = await stallAfter('HELLO\r\n\r\n')
  const { status, body } = statusAndBody(cut.answer)
  t.equal(status, 400)
  t.same(body, { error: 'BadRequest', message: 'The request is not valid HTTP.' })
})
