// The stream through a compressing proxy (issue 28 item 7, DECISIONS §16): the web app reaches /api
// through a proxy that gzips responses (Next.js rewrites; here node:http with the `compression`
// middleware, which follows the same rule), and gzip would hold every event in its compressor. The
// stream says `Cache-Control: no-cache, no-transform`, so it passes uncompressed and an event
// arrives within a second of its write; `: ping` comments keep it from ever being silent for long.
import t from 'tap'
import { createServer, request, type IncomingHttpHeaders } from 'node:http'
import compression from 'compression'
import { startApp, uniqueClientIp } from './helpers/app.js'
import { signInPerson } from './helpers/people.js'
import { openStream } from './helpers/sse.js'

const s = await startApp({ SSE_HEARTBEAT_MS: '400' })
t.teardown(s.close)

/** A compressing reverse proxy to the app, as a web app's server puts in front of /api. */
async function compressingProxy (target: URL): Promise<{ url: string, close (): Promise<void> }> {
  // Every reply whatever its size, so the ordinary reply below shows the proxy at work.
  const compress = compression({ threshold: 0 })
  type Req = Parameters<typeof compress>[0]
  type Res = Parameters<typeof compress>[1]
  const server = createServer((req, res) => {
    compress(req as unknown as Req, res as unknown as Res, () => {
      const upstream = request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers as IncomingHttpHeaders }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
      })
      upstream.on('error', () => { res.destroy() })
      res.on('close', () => { upstream.destroy() })
      req.pipe(upstream)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => { resolve() }))
    }
  }
}

/** Fails the test instead of hanging when a compressing proxy holds the stream back whole. */
async function within<T> (promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([promise, new Promise<never>((_resolve, reject) => { timer = setTimeout(() => { reject(new Error(`${what} did not arrive within ${ms} ms`)) }, ms) })])
  } finally {
    clearTimeout(timer)
  }
}

t.test('through a compressing proxy the stream is not compressed, and an event arrives within a second of its write', async (t) => {
  const proxy = await compressingProxy(new URL(s.url))
  t.teardown(proxy.close)
  const user = await signInPerson(s, 'behind-proxy')
  const opened = await within(openStream(proxy.url, { cookie: user.cookie, headers: { 'accept-encoding': 'gzip, deflate, br', 'x-forwarded-for': uniqueClientIp() } }), 3_000, 'the stream\'s headers')
  t.teardown(() => { opened.close() })
  t.equal(opened.status, 200)
  t.equal(opened.headers.get('cache-control'), 'no-cache, no-transform')
  t.equal(opened.headers.get('content-encoding'), null, 'the proxy left the stream uncompressed')

  // The proxy does compress what may be transformed: it is a real compressing proxy.
  const ordinary = await fetch(`${proxy.url}/api/rooms?limit=100`, { headers: { cookie: `app_session=${user.cookie}`, 'accept-encoding': 'gzip' } })
  t.equal(ordinary.headers.get('content-encoding'), 'gzip', 'an ordinary JSON reply through it is gzipped')

  for (const name of ['first through the proxy', 'second through the proxy']) {
    const written = await user.rest('POST', '/api/rooms', { name, isPublic: false })
    t.equal(written.statusCode, 201)
    await opened.waitFor((m) => m.json.payload?.name === name, 1_000)
    t.pass(`"${name}" arrived within a second of its write`)
  }
})

t.test('between two heartbeats a `: ping` comment goes out, through the proxy too', async (t) => {
  const proxy = await compressingProxy(new URL(s.url))
  t.teardown(proxy.close)
  const user = await signInPerson(s, 'pinged')
  const opened = await within(openStream(proxy.url, { cookie: user.cookie, headers: { 'x-forwarded-for': uniqueClientIp() } }), 3_000, 'the stream\'s headers')
  t.teardown(() => { opened.close() })
  const first = await opened.waitFor((m) => m.event === 'heartbeat')
  const second = await opened.waitFor((m) => m.event === 'heartbeat' && m !== first)
  const [from, to] = [opened.messages.indexOf(first) + 1, opened.messages.indexOf(second)]
  const between = opened.comments.filter((c) => c.after >= from && c.after <= to)
  t.same(between.map((c) => c.text), ['ping'], 'one ping between them (SSE_HEARTBEAT_MS=400: a ping at 200 ms)')
  t.equal(opened.events().length, 0, 'clients see no event for it')
})
