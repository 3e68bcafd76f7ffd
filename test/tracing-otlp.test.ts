// Traces from the process as `npm start` runs it (issue 31 item 5): `--import` of tracing-preload
// with OTEL_EXPORTER_OTLP_ENDPOINT set, spans sent over OTLP/HTTP (protobuf) to a receiver in this
// test, flushed on SIGTERM; the access line carries the trace id. Run from the TypeScript source (tsx), as test/shutdown.test.ts does, so
// it needs no build; the preload and the server are the same modules `dist/` runs.
import t from 'tap'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { startServer } from './helpers/server-process.js'

const received: Array<{ path: string, contentType: string, body: Buffer }> = []
const receiver = createServer((request, response) => {
  const chunks: Buffer[] = []
  request.on('data', (chunk: Buffer) => chunks.push(chunk))
  request.on('end', () => {
    received.push({ path: request.url ?? '', contentType: request.headers['content-type'] ?? '', body: Buffer.concat(chunks) })
    response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end()
  })
})
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
t.teardown(() => { receiver.close() })
const endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c'

t.test('request spans reach the OTLP endpoint, in the caller\'s trace, flushed on SIGTERM', async (t) => {
  const { child, url, exited } = await startServer({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SERVICE_NAME: 'canvas-test' }, ['--import=tsx', '--import', './src/tracing-preload.ts', 'src/server.ts'])
  t.teardown(() => { child.kill('SIGKILL') })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const res = await fetch(`${url}/api/auth/me`, { headers: { traceparent: `00-${TRACE_ID}-b7ad6b7169203331-01` } })
  t.equal(res.status, 401)
  child.kill('SIGTERM')
  t.equal(await exited, 0)
  const traces = received.filter((one) => one.path === '/v1/traces')
  t.ok(traces.length > 0, 'spans exported to /v1/traces')
  t.ok(traces.every((one) => one.contentType === 'application/x-protobuf'), 'as protobuf')
  const all = Buffer.concat(traces.map((one) => one.body))
  t.ok(all.includes(Buffer.from(TRACE_ID, 'hex')), 'the caller\'s trace id')
  t.ok(all.includes(Buffer.from('GET /api/auth/me')), 'the request span, named by its route')
  t.ok(all.includes(Buffer.from('auth.getMe')), 'with its operation')
  t.ok(all.includes(Buffer.from('canvas-test')), 'the service named by OTEL_SERVICE_NAME')
  const accessLines = output.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as { msg?: string, route?: string, traceId?: string }).filter((line) => line.msg === 'request')
  t.equal(accessLines.find((line) => line.route === '/api/auth/me')?.traceId, TRACE_ID, 'the access line carries the trace id')
})
