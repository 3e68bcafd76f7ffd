// The body idle timeout on HTTP/1.1 (issue 27): an upload that keeps moving, however slowly, passes —
// here half a KB every 100 ms for 12 s, twenty times the idle bound — and one that stops is answered
// 408 once no byte has come for the bound (HTTP_BODY_IDLE_TIMEOUT_MS, 30 s by default, 600 ms here),
// long before the whole-request bound (HTTP_REQUEST_TIMEOUT_MS, 120 s by default), leaving no file
// behind.
import t from 'tap'
import http from 'node:http'
import { startApp } from './helpers/app.js'
import { signInPerson } from './helpers/people.js'
import { eventually, multipartBytes, pngOfSize } from './helpers/uploads.js'

const BODY_IDLE_MS = 600
const CHUNK = 512
const EVERY_MS = 100

const s = await startApp({ HTTP_BODY_IDLE_TIMEOUT_MS: String(BODY_IDLE_MS) })
t.teardown(s.close)
const person = await signInPerson(s, 'body-idle')

interface Outcome { status: number, headers: http.IncomingHttpHeaders, body: string, afterLastByteMs: number, tookMs: number }

/** Uploads `body` in `chunk`-byte pieces, one every `everyMs`, stopping for good after `stopAfter` bytes if given. */
async function trickle (body: Buffer, contentType: string, options: { chunk: number, everyMs: number, stopAfter?: number }): Promise<Outcome> {
  const { port } = new URL(s.url)
  return await new Promise((resolve, reject) => {
    let sent = 0
    const startedAt = Date.now()
    let lastByteAt = startedAt
    const request = http.request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/api/uploads',
      headers: { cookie: `app_session=${person.cookie}`, 'content-type': contentType, 'content-length': String(body.length) }
    }, (response) => {
      let text = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => { text += chunk })
      response.on('end', () => {
        clearInterval(timer)
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text, afterLastByteMs: Date.now() - lastByteAt, tookMs: Date.now() - startedAt })
      })
    })
    request.on('error', (error) => { clearInterval(timer); reject(error) })
    const timer = setInterval(() => {
      if (sent >= (options.stopAfter ?? body.length)) return
      const piece = body.subarray(sent, sent + options.chunk)
      sent += piece.length
      lastByteAt = Date.now()
      request.write(piece)
      if (sent === body.length) {
        clearInterval(timer)
        request.end()
      }
    }, options.everyMs)
  })
}

t.test('an upload at 5 KB/s for 12 s passes; one that stops is answered 408 after the idle bound, nothing kept', async (t) => {
  const moving = multipartBytes(['type', 'attachment'], { filename: 'slow.png', content: pngOfSize(60 * 1024 - 200), type: 'image/png' })
  const stopping = multipartBytes(['type', 'attachment'], { filename: 'dead.png', content: pngOfSize(60 * 1024), type: 'image/png' })
  const [slow, dead] = await Promise.all([
    trickle(moving.body, moving.contentType, { chunk: CHUNK, everyMs: EVERY_MS }),
    trickle(stopping.body, stopping.contentType, { chunk: CHUNK, everyMs: EVERY_MS, stopAfter: 5 * CHUNK })
  ])

  t.equal(slow.status, 201, `the slow upload (${moving.body.length} bytes over ${slow.tookMs} ms) was stored`)
  t.ok(slow.tookMs >= 20 * BODY_IDLE_MS, 'it took twenty times the idle bound or more')
  t.match(JSON.parse(slow.body), { data: { size: 60 * 1024 - 200 } })

  t.equal(dead.status, 408, 'the stalled one was refused')
  t.same(JSON.parse(dead.body), { error: 'RequestTimeout', message: 'The request body stopped arriving; send it again.' })
  t.equal(dead.headers.connection, 'close')
  t.ok(dead.afterLastByteMs >= BODY_IDLE_MS - 100 && dead.afterLastByteMs < 30_000, `${dead.afterLastByteMs} ms after its last byte`)
  t.ok(await eventually(() => s.app.core.uploads.receiving() === 0), 'no upload handler left running')
})
