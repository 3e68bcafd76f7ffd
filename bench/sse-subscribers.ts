// Child process of bench/sse.ts: holds many SSE connections and timestamps every message on arrival
// (epoch milliseconds from the high-resolution clock, comparable with the parent's). Driven over IPC:
//   { cmd: 'open', targets: [{ url, headers }] }  → { opened, failed, statuses }
//   { cmd: 'received' }                             → { received, bursts, ended }: messages with a marker
//                                                     so far, burst events (title `burst-…`, bench/live-serve.ts)
//                                                     received, and streams the server ended
//   { cmd: 'report', acks: [[seq, ackTime, writer?]] }
//                                                   → latency summary (receipt − acknowledgement), duplicates,
//                                                     and, when acks name their writer, the summary split by
//                                                     whether the stream's instance (its `x-upstream` response
//                                                     header, set by a load balancer) is the writer's
//   { cmd: 'close' }                                → closes everything
// A message's marker is `seq-<n>` anywhere in its data; heartbeats carry none and are ignored. A
// stream that receives a marker it already had counts a duplicate, not a second delivery.
import { request, type ClientRequest } from 'node:http'

interface Target { url: string, headers: Record<string, string> }
type Command =
  | { cmd: 'open', targets: Target[] }
  | { cmd: 'report', acks: Array<[number, number, string?]> }
  | { cmd: 'received' }
  | { cmd: 'close' }

/** One open stream: the instance that serves it (behind a load balancer) and the markers it has had. */
interface Connection { upstream: string | undefined, seen: Set<number> }

const now = (): number => performance.timeOrigin + performance.now()
const receipts = new Map<number, Array<{ at: number, connection: Connection }>>()
let receivedCount = 0
let duplicates = 0
let burstCount = 0
let endedCount = 0
/** Set by `close`: streams closed from here on are not counted as ended by the server. */
let closing = false
const requests: ClientRequest[] = []
const connections: Connection[] = []
const MARKER = /seq-(\d+)/
const BURST = '"title":"burst-'

function record (frame: string, at: number, connection: Connection): void {
  if (frame.includes(BURST)) {
    burstCount++
    return
  }
  const match = MARKER.exec(frame)
  if (match?.[1] === undefined) return
  const seq = Number(match[1])
  if (connection.seen.has(seq)) {
    duplicates++
    return
  }
  connection.seen.add(seq)
  let times = receipts.get(seq)
  if (times === undefined) receipts.set(seq, times = [])
  times.push({ at, connection })
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
      const upstream = res.headers['x-upstream']
      const connection: Connection = { upstream: typeof upstream === 'string' ? upstream : undefined, seen: new Set() }
      connections.push(connection)
      let buffer = ''
      res.on('data', (chunk: string) => {
        const at = now()
        buffer += chunk
        let end: number
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          record(buffer.slice(0, end), at, connection)
          buffer = buffer.slice(end + 2)
        }
      })
      res.on('error', () => {})
      res.on('close', () => { if (!closing) endedCount++ })
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

function summary (latencies: number[]): { n: number, p50: number, p99: number, max: number } {
  const sorted = Float64Array.from(latencies).sort()
  return { n: sorted.length, p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), max: sorted[sorted.length - 1] ?? Number.NaN }
}

function clearReceipts (): void {
  receipts.clear()
  receivedCount = 0
  duplicates = 0
  burstCount = 0
  for (const connection of connections) connection.seen.clear()
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
      clearReceipts()
      const upstreams: Record<string, number> = {}
      for (const connection of connections) if (connection.upstream !== undefined) upstreams[connection.upstream] = (upstreams[connection.upstream] ?? 0) + 1
      process.send?.({ opened, failed: message.targets.length - opened, statuses, upstreams })
    } else if (message.cmd === 'received') {
      process.send?.({ received: receivedCount, bursts: burstCount, ended: endedCount })
    } else if (message.cmd === 'report') {
      const latencies: number[] = []
      const same: number[] = []
      const cross: number[] = []
      for (const [seq, ack, writer] of message.acks) {
        for (const { at, connection } of receipts.get(seq) ?? []) {
          const latency = Math.max(0, at - ack)
          latencies.push(latency)
          if (writer !== undefined && connection.upstream !== undefined) (connection.upstream === writer ? same : cross).push(latency)
        }
      }
      const all = summary(latencies)
      process.send?.({ received: all.n, p50: all.p50, p99: all.p99, max: all.max, duplicates, same: summary(same), cross: summary(cross) })
      clearReceipts()
    } else {
      closing = true
      for (const req of requests.splice(0)) req.destroy()
      connections.length = 0
      process.send?.({ closed: true })
    }
  })()
})
