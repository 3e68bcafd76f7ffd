// Child process of bench/sse.ts: holds many SSE connections and timestamps every message on arrival
// (epoch milliseconds from the high-resolution clock, comparable with the parent's). Driven over IPC:
//   { cmd: 'open', targets: [{ url, headers }] }  → { opened, failed, statuses }
//   { cmd: 'received' }                             → { received }: messages with a marker so far
//   { cmd: 'report', acks: [[seq, ackTime]] }       → latency summary (receipt − acknowledgement)
//   { cmd: 'close' }                                → closes everything
// A message's marker is `seq-<n>` anywhere in its data; heartbeats carry none and are ignored.
import { request, type ClientRequest } from 'node:http'

interface Target { url: string, headers: Record<string, string> }
type Command =
  | { cmd: 'open', targets: Target[] }
  | { cmd: 'report', acks: Array<[number, number]> }
  | { cmd: 'received' }
  | { cmd: 'close' }

const now = (): number => performance.timeOrigin + performance.now()
const receipts = new Map<number, number[]>()
let receivedCount = 0
const requests: ClientRequest[] = []
const MARKER = /seq-(\d+)/

function record (frame: string, at: number): void {
  const match = MARKER.exec(frame)
  if (match?.[1] === undefined) return
  const seq = Number(match[1])
  let times = receipts.get(seq)
  if (times === undefined) receipts.set(seq, times = [])
  times.push(at)
  receivedCount++
}

async function open (target: Target): Promise<number> {
  return await new Promise((resolve) => {
    const req = request(target.url, { headers: { accept: 'text/event-stream', ...target.headers }, agent: false }, (res) => {
      if (res.statusCode !== 200) {
        res.resume()
        resolve(res.statusCode ?? 0)
        return
      }
      res.setEncoding('utf8')
      let buffer = ''
      res.on('data', (chunk: string) => {
        const at = now()
        buffer += chunk
        let end: number
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          record(buffer.slice(0, end), at)
          buffer = buffer.slice(end + 2)
        }
      })
      res.on('error', () => {})
      resolve(200)
    })
    req.on('error', () => { resolve(-1) })
    req.end()
    requests.push(req)
  })
}

function percentile (sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN
}

process.on('message', (message: Command) => {
  void (async () => {
    if (message.cmd === 'open') {
      const statuses: Record<string, number> = {}
      let opened = 0
      // A few hundred at a time: the target sees a realistic connection ramp, not one burst.
      for (let i = 0; i < message.targets.length; i += 200) {
        const batch = await Promise.all(message.targets.slice(i, i + 200).map(open))
        for (const status of batch) {
          statuses[status] = (statuses[status] ?? 0) + 1
          if (status === 200) opened++
        }
      }
      receipts.clear()
      receivedCount = 0
      process.send?.({ opened, failed: message.targets.length - opened, statuses })
    } else if (message.cmd === 'received') {
      process.send?.({ received: receivedCount })
    } else if (message.cmd === 'report') {
      const latencies: number[] = []
      let received = 0
      for (const [seq, ack] of message.acks) {
        for (const at of receipts.get(seq) ?? []) {
          latencies.push(Math.max(0, at - ack))
          received++
        }
      }
      const sorted = Float64Array.from(latencies).sort()
      process.send?.({ received, p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), max: sorted[sorted.length - 1] ?? Number.NaN })
      receipts.clear()
      receivedCount = 0
    } else {
      for (const req of requests.splice(0)) req.destroy()
      process.send?.({ closed: true })
    }
  })()
})
