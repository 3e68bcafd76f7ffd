// `npx tsx bench/idempotency.ts` (issues 33, 38 item 4, 40 item 4): what an Idempotency-Key costs.
//
// Creates: `POST /api/rooms` with a fresh key per request against the same create without one (goal
// ≥ 0.9× on Postgres: the key is claimed and the answer kept by one more statement in the create's
// own transaction, no commit of their own), and a replay (one key for every request) for scale.
// Autocannon, BENCH_CONNECTIONS (10) connections, BENCH_SECONDS (5) per scenario.
//
// Uploads: a BENCH_UPLOAD_MIB (25) MiB attachment posted BENCH_UPLOADS (4) times one after another,
// with a fresh key each (the file's bytes hashed as they stream, for the fingerprint) against the
// same without a key (goal ≥ 0.9× MiB/s). Timed from the first byte sent to the answer; each upload
// deleted afterwards (not timed).
//
// Scenarios interleaved, BENCH_ROUNDS (3) rounds, ratios are medians of same-round ratios.
// DATABASE_URL selects Postgres (the goals are stated there), REDIS_URL Redis.
// A quick check that it runs: BENCH_ROUNDS=1 BENCH_SECONDS=1 BENCH_UPLOADS=1 BENCH_UPLOAD_MIB=1.
import http from 'node:http'
import { randomBytes, randomUUID } from 'node:crypto'
import { buildDist, measure, row, signIn, startTarget, type Measurement } from './harness.js'

const MiB = 1024 * 1024
buildDist()
const duration = Number(process.env.BENCH_SECONDS ?? 5)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
/** PGlite runs one query at a time: 10 connections keep it busy (BENCH_CONNECTIONS to change). */
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10)
const uploadBytes = Number(process.env.BENCH_UPLOAD_MIB ?? 25) * MiB
const uploadsPerRound = Number(process.env.BENCH_UPLOADS ?? 4)

// Every upload is deleted after it is timed; the quota only has to hold one at a time.
const service = await startTarget('service')
const cookie = await signIn(service, `idempotency-bench-${Date.now()}@example.test`)
const headers = { cookie: `app_session=${cookie}`, 'content-type': 'application/json' }
const body = JSON.stringify({ name: 'bench room' })
const replayKey = randomUUID()

const creates: Array<[string, Parameters<typeof measure>[0]]> = [
  ['POST /api/rooms', { url: `${service.url}/api/rooms`, method: 'POST', headers, body }],
  ['POST /api/rooms, a new key each', {
    url: `${service.url}/api/rooms`,
    requests: [{ method: 'POST', headers, body, setupRequest: (request) => ({ ...request, headers: { ...request.headers, 'idempotency-key': randomUUID() } }) }]
  }],
  ['POST /api/rooms, one key (replays)', { url: `${service.url}/api/rooms`, method: 'POST', headers: { ...headers, 'idempotency-key': replayKey }, body }]
]

const boundary = `----bench${randomBytes(8).toString('hex')}`
const form = Buffer.concat([
  Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="bench.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`),
  randomBytes(uploadBytes),
  Buffer.from(`\r\n--${boundary}--\r\n`)
])
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })

/** One upload; its time in ms from the first byte sent to the answer, then the file is deleted. */
async function upload (key: string | undefined): Promise<number> {
  const started = performance.now()
  const answer = await new Promise<string>((resolve, reject) => {
    const request = http.request(`${service.url}/api/attachments`, {
      method: 'POST',
      agent,
      headers: { cookie: `app_session=${cookie}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(form.length), ...(key === undefined ? {} : { 'idempotency-key': key }) }
    }, (response) => {
      let text = ''
      response.on('data', (chunk: Buffer) => { text += chunk.toString() })
      response.on('end', () => { if (response.statusCode === 201) resolve(text); else reject(new Error(`upload: ${String(response.statusCode)} ${text}`)) })
    })
    request.on('error', reject)
    request.end(form)
  })
  const ms = performance.now() - started
  const id = (JSON.parse(answer) as { data: { id: string } }).data.id
  await fetch(`${service.url}/api/uploads/${id}`, { method: 'DELETE', headers: { cookie: `app_session=${cookie}` } })
  return ms
}

/** MiB/s over `uploadsPerRound` uploads one after another. */
async function uploadRate (keyed: boolean): Promise<number> {
  let ms = 0
  for (let i = 0; i < uploadsPerRound; i++) ms += await upload(keyed ? randomUUID() : undefined)
  return (uploadBytes * uploadsPerRound / MiB) / (ms / 1000)
}

const createResults = new Map<string, Measurement[]>(creates.map(([name]) => [name, []]))
const uploadResults = { plain: [] as number[], keyed: [] as number[] }
await uploadRate(false) // warm-up: code paths, storage
for (let round = 1; round <= rounds; round++) {
  console.log(`round ${round} of ${rounds}`)
  for (const [name, options] of creates) createResults.get(name)?.push(await measure({ duration, connections, ...options }))
  uploadResults.plain.push(await uploadRate(false))
  uploadResults.keyed.push(await uploadRate(true))
}
await service.stop()

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN
const of = (name: string): Measurement[] => createResults.get(name) ?? []
const ratio = (a: string, b: string): number => median(of(a).map((m, i) => m.rps / (of(b)[i]?.rps ?? NaN)))
console.log(`\n${process.env.DATABASE_URL === undefined ? 'PGlite' : 'Postgres'}, ${rounds} rounds; creates: ${duration} s per scenario, ${connections} connections (median round's req/s and p99)`)
for (const [name] of creates) {
  const all = of(name)
  const typical = all.find((m) => m.rps === median(all.map((x) => x.rps))) ?? all[0]
  if (typical !== undefined) console.log(row(name, typical, name === 'POST /api/rooms' ? undefined : ratio(name, 'POST /api/rooms')))
}
const uploadRatio = median(uploadResults.keyed.map((keyed, i) => keyed / (uploadResults.plain[i] ?? NaN)))
console.log(`uploads of ${uploadBytes / MiB} MiB, ${uploadsPerRound} a round: plain ${median(uploadResults.plain).toFixed(1)} MiB/s, keyed ${median(uploadResults.keyed).toFixed(1)} MiB/s`)
console.log(`\nkeyed create / plain create: ${ratio('POST /api/rooms, a new key each', 'POST /api/rooms').toFixed(2)}× (goal ≥ 0.9 on Postgres)`)
console.log(`keyed upload / plain upload: ${uploadRatio.toFixed(2)}× MiB/s (goal ≥ 0.9)`)
