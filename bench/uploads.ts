// `npx tsx bench/uploads.ts`: a 25 MiB attachment upload (issue 21 item 2) against a plain node:fs
// stream write of the same bytes in the same run, and the service's resident memory while 10 such
// uploads run at once (goal: growth bounded by stream buffers, not by file size: far below the
// 250 MiB that holding the files would take).
//
// The service runs from dist/ in its own process (uploads on local disk; DATABASE_URL / REDIS_URL
// as for any target); this process is the client, sending each upload over loopback HTTP from one
// prepared multipart body.
//
// Memory first, on the freshly started service: its RSS (/proc/<pid>/status) after one small
// upload, then its peak while 10 uploads of 25 MiB run in parallel, sampled every 10 ms, and the
// peak of a second batch of 10 (what a leak or a per-file buffer would grow). On the embedded
// database the process also holds PGlite, whose own memory moves by tens of MB: measure with
// DATABASE_URL for a clean figure.
//
// Then throughput, per round (BENCH_ROUNDS, 5), back to back: the 25 MiB written to a file in the
// service's DATA_DIR through fs.createWriteStream in 64 KiB chunks (what arrives from a socket);
// the same flushed to disk before it is closed (`flush: true`, as the service does before it
// answers); a bare node:http server in its own process piping the request body into a flushed file
// (what the transport itself costs: loopback TCP, two processes); and one upload to
// POST /api/attachments, timed from the first byte sent to the 201. MiB/s; ratios are medians of
// same-round ratios.
import http from 'node:http'
import { randomBytes } from 'node:crypto'
import { createWriteStream, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { spawn } from 'node:child_process'
import { buildDist, reapOnExit, signIn, startTarget } from './harness.js'

const MiB = 1024 * 1024
const SIZE = 25 * MiB
const CHUNK = 64 * 1024
const rounds = Number(process.env.BENCH_ROUNDS ?? 5)
const PARALLEL = 10

buildDist()
const service = await startTarget('service')
const cookie = await signIn(service, `uploads-bench-${Date.now()}@example.test`)
const content = randomBytes(SIZE)
const boundary = `----bench${randomBytes(8).toString('hex')}`
const body = Buffer.concat([
  Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="bench.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`),
  content,
  Buffer.from(`\r\n--${boundary}--\r\n`)
])
const agent = new http.Agent({ keepAlive: true, maxSockets: PARALLEL })

/** One request carrying the form to `url`; its time in ms from the first byte sent to the answer. */
async function send (url: string, expected: number): Promise<number> {
  const started = performance.now()
  await new Promise<void>((resolve, reject) => {
    const request = http.request(url, {
      method: 'POST',
      agent,
      headers: { cookie: `app_session=${cookie}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(body.length) }
    }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () => {
        if (response.statusCode === expected) resolve()
        else reject(new Error(`${url}: ${String(response.statusCode)} ${Buffer.concat(chunks).toString()}`))
      })
    })
    request.on('error', reject)
    request.end(body)
  })
  return performance.now() - started
}

const upload = async (): Promise<number> => await send(`${service.url}/api/attachments`, 201)

/** A bare node:http server in a process of its own: each request body piped into a flushed file. */
async function startRawSink (dir: string): Promise<{ url: string, pid: number, stop: () => void }> {
  const child = reapOnExit(spawn(process.execPath, ['-e', `
    const { createServer } = require('node:http')
    const { createWriteStream, rmSync } = require('node:fs')
    const { pipeline } = require('node:stream/promises')
    let n = 0
    const server = createServer((req, res) => {
      const file = ${JSON.stringify(dir)} + '/raw-' + n++
      pipeline(req, createWriteStream(file, { flush: true })).then(() => { rmSync(file); res.writeHead(201).end() }, () => res.writeHead(500).end())
    })
    server.listen(0, '127.0.0.1', () => console.log('listening http://127.0.0.1:' + server.address().port))`], { stdio: ['ignore', 'pipe', 'inherit'] }))
  const url = await new Promise<string>((resolve) => {
    child.stdout?.on('data', (chunk: Buffer) => { const match = /listening (\S+)/.exec(chunk.toString()); if (match?.[1] !== undefined) resolve(match[1]) })
  })
  if (child.pid === undefined) throw new Error('no sink pid')
  return { url, pid: child.pid, stop: () => { child.kill() } }
}

/** The same bytes through a plain fs write stream, in socket-sized chunks; its time in ms. */
async function fsWrite (flush: boolean): Promise<number> {
  const file = join(service.dataDir, `baseline-${randomBytes(4).toString('hex')}`)
  const chunks = function * (): Generator<Buffer> { for (let i = 0; i < SIZE; i += CHUNK) yield content.subarray(i, i + CHUNK) }
  const started = performance.now()
  await pipeline(Readable.from(chunks()), createWriteStream(file, { flush }))
  const ms = performance.now() - started
  rmSync(file)
  return ms
}

function rssMiB (pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1])
  return kb / 1024
}

/** CPU time a process has used (user + system, all threads), in ms: /proc/<pid>/stat in clock ticks (100/s). */
function cpuMs (pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}
const ownCpuMs = (): number => { const { user, system } = process.cpuUsage(); return (user + system) / 1000 }

/** Runs `work` and returns its wall time and the CPU time `cpu` counted meanwhile. */
async function timed (work: () => Promise<unknown>, cpu: () => number): Promise<{ ms: number, cpu: number }> {
  const cpuBefore = cpu()
  const started = performance.now()
  await work()
  return { ms: performance.now() - started, cpu: cpu() - cpuBefore }
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN
const mibps = (ms: number): number => SIZE / MiB / (ms / 1000)

const servicePid = service.child.pid
if (servicePid === undefined) throw new Error('no service pid')
const pid: number = servicePid

// Memory, on the fresh service. One small upload first, so the code paths are loaded.
const small = Buffer.concat([Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="small.txt"\r\n\r\nhello\r\n--${boundary}--\r\n`)])
await fetch(`${service.url}/api/attachments`, { method: 'POST', headers: { cookie: `app_session=${cookie}`, 'content-type': `multipart/form-data; boundary=${boundary}` }, body: new Uint8Array(small) })
const before = rssMiB(pid)
async function parallelPeak (): Promise<{ peak: number, seconds: number }> {
  let peak = rssMiB(pid)
  const sampler = setInterval(() => { peak = Math.max(peak, rssMiB(pid)) }, 10)
  const started = performance.now()
  await Promise.all(Array.from({ length: PARALLEL }, upload))
  clearInterval(sampler)
  return { peak: Math.max(peak, rssMiB(pid)), seconds: (performance.now() - started) / 1000 }
}
const first = await parallelPeak()
const second = await parallelPeak()
const after = rssMiB(pid)

const sink = await startRawSink(service.dataDir)
type Timing = Awaited<ReturnType<typeof timed>>
const results: Array<{ plain: Timing, flushed: Timing, raw: Timing, service: Timing }> = []
for (let round = 1; round <= rounds; round++) {
  const result = {
    plain: await timed(async () => await fsWrite(false), ownCpuMs),
    flushed: await timed(async () => await fsWrite(true), ownCpuMs),
    raw: await timed(async () => await send(sink.url, 201), () => cpuMs(sink.pid)),
    service: await timed(upload, () => cpuMs(pid))
  }
  results.push(result)
  console.log(`round ${round}: fs write ${mibps(result.plain.ms).toFixed(0)} MiB/s, flushed ${mibps(result.flushed.ms).toFixed(0)}, bare node:http to a file ${mibps(result.raw.ms).toFixed(0)}, upload ${mibps(result.service.ms).toFixed(0)} (${result.service.ms.toFixed(0)} ms, ${result.service.cpu} ms CPU)`)
}
sink.stop()
agent.destroy()
await service.stop()

const total = (pick: (r: typeof results[number]) => Timing): number => results.reduce((sum, r) => sum + pick(r).cpu, 0) / rounds
const line = (name: string, pick: (r: typeof results[number]) => Timing, cpuOf: string): void => {
  console.log(`${name.padEnd(46)} ${mibps(median(results.map((r) => pick(r).ms))).toFixed(0).padStart(5)} MiB/s   ${total(pick).toFixed(0).padStart(4)} ms CPU per file (${cpuOf})`)
}
console.log(`\n${process.version}, ${process.env.DATABASE_URL === undefined ? 'embedded PGlite' : 'Postgres'}, ${rounds} rounds, one ${SIZE / MiB} MiB attachment each (median MiB/s; mean CPU)`)
line('plain fs write stream (64 KiB chunks)', (r) => r.plain, 'this process')
line('fs write stream, flushed to disk', (r) => r.flushed, 'this process')
line('bare node:http → flushed file (other process)', (r) => r.raw, 'the server')
line('POST /api/attachments', (r) => r.service, 'the service')
console.log(`upload / plain fs write:   ${median(results.map((r) => r.plain.ms / r.service.ms)).toFixed(2)}× throughput`)
console.log(`upload / flushed fs write: ${median(results.map((r) => r.flushed.ms / r.service.ms)).toFixed(2)}× throughput`)
console.log(`upload / bare node:http:   ${median(results.map((r) => r.raw.ms / r.service.ms)).toFixed(2)}× throughput, ${(total((r) => r.service) / total((r) => r.raw)).toFixed(1)}× its CPU`)
console.log(`\nservice RSS ${before.toFixed(1)} MB after one small upload; ${PARALLEL} parallel ${SIZE / MiB} MiB uploads (${PARALLEL * SIZE / MiB} MiB of files):`)
console.log(`  first batch  (${first.seconds.toFixed(1)} s): peak ${first.peak.toFixed(1)} MB, growth ${(first.peak - before).toFixed(1)} MB`)
console.log(`  second batch (${second.seconds.toFixed(1)} s): peak ${second.peak.toFixed(1)} MB, growth ${(second.peak - before).toFixed(1)} MB; ${after.toFixed(1)} MB after`)
