// The baseline of bench/sse.ts, in its own process: a bare node:http SSE broadcaster. GET /sub opens
// a stream (same headers as the service); POST /publish answers 204 and then writes its body as one
// message to every stream — the least any SSE fan-out can do. Prints `listening <url>`.
import { createServer, type ServerResponse } from 'node:http'

const streams = new Set<ServerResponse>()
let id = 0

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/sub') {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' })
    res.write(': subscribed\n\n')
    streams.add(res)
    res.on('close', () => { streams.delete(res) })
    return
  }
  if (req.method === 'POST' && req.url === '/publish') {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (chunk: string) => { body += chunk })
    req.on('end', () => {
      res.writeHead(204).end()
      const frame = `id: ${++id}\ndata: ${body}\n\n`
      for (const stream of streams) stream.write(frame)
    })
    return
  }
  res.writeHead(404).end()
})

server.listen(0, '127.0.0.1', () => {
  const address = server.address()
  if (address !== null && typeof address === 'object') console.log(`listening http://127.0.0.1:${address.port}`)
})
// Resident size after full collections ({ cmd: 'rss' } over IPC, run with --expose-gc), as the service answers it.
const collect = (globalThis as { gc?: () => void }).gc
process.on('message', (message: { cmd?: string }) => {
  if (message.cmd !== 'rss') return
  for (let i = 0; i < 3; i++) collect?.()
  const memory = process.memoryUsage()
  process.send?.({ rss: memory.rss, heap: memory.heapUsed + memory.external, streams: streams.size })
})
process.on('SIGTERM', () => { process.exit(0) })
