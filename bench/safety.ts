// `npx tsx bench/safety.ts [baseline-dir]` (issue 30): 1. the local classifier on a 1 KB and a 10 KB
// text, in this process from the compiled `dist/` (BENCH_CLASSIFY, 500 runs each after 50 unmeasured):
// ms p50/p99 (goal p99 ≤ 5 ms for 1 KB); 2. what the `hidden` rule costs `GET /api/rooms/:roomId` and
// ListSparks (`GET /api/sparks?roomId=…`, 50 sparks, read by a member who is not the creator): this
// checkout against a baseline checkout built from before the rule (default: a copy of `main` exported
// by the caller into the directory given), each served from its `dist/` in its own process on its own
// embedded database (or DATABASE_URL's server, a fresh database per target). Every round measures
// both targets back to back in a rotated order; ratios are medians of same-round ratios (goal ≥ 0.95×).
// BENCH_ROUNDS (3), BENCH_SECONDS (5).
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import pg from 'pg'
import { buildDist, builtModule, measure, signIn, startTarget, type Measurement, type Target } from './harness.js'

const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const duration = Number(process.env.BENCH_SECONDS ?? 5)
const runs = Number(process.env.BENCH_CLASSIFY ?? 500)
const here = resolve(import.meta.dirname, '..')
const baseline = process.argv[2] === undefined ? undefined : resolve(process.argv[2])

buildDist(here)
if (baseline !== undefined) buildDist(baseline)

// 1. The classifier.
const { classifyText } = await import(pathToFileURL(builtModule(here, 'core/safety/classify.js')).href) as typeof import('../src/core/safety/classify.js')
const PROSE = 'We planted tomatoes along the south wall this spring; they like sun, water and a little patience. '
const textOf = (bytes: number): string => PROSE.repeat(Math.ceil(bytes / PROSE.length)).slice(0, bytes)
const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN
for (const bytes of [1024, 10_240]) {
  const text = textOf(bytes)
  for (let i = 0; i < 50; i++) classifyText(text)
  const times: number[] = []
  for (let i = 0; i < runs; i++) {
    const start = performance.now()
    classifyText(text)
    times.push(performance.now() - start)
  }
  times.sort((a, b) => a - b)
  console.log(`classify ${String(bytes / 1024).padStart(2)} KB: p50 ${percentile(times, 0.5).toFixed(2)} ms, p99 ${percentile(times, 0.99).toFixed(2)} ms (${runs} runs)`)
}

if (baseline === undefined) {
  console.log('no baseline checkout given: skipping the hidden-rule comparison')
  process.exit(0)
}

// 2. The hidden rule on reads.
async function freshDatabase (label: string): Promise<string | undefined> {
  const base = process.env.DATABASE_URL
  if (base === undefined) return undefined
  const url = new URL(base)
  const name = `${url.pathname.slice(1) || 'bench'}_${label}`
  const admin = new pg.Client({ connectionString: Object.assign(new URL(base), { pathname: '/postgres' }).toString() })
  await admin.connect()
  await admin.query(`drop database if exists "${name}" with (force)`)
  await admin.query(`create database "${name}"`)
  await admin.end()
  url.pathname = `/${name}`
  return url.toString()
}

interface Served { label: string, target: Target, reader: string, roomId: string }

async function serve (label: string, root: string): Promise<Served> {
  const databaseUrl = await freshDatabase(label)
  const target = await startTarget('service', { BENCH_SERVICE_ROOT: root, RATE_LIMIT_KEY_PREFIX: `bench-${label}:`, ...(databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl }) })
  const owner = `app_session=${await signIn(target, 'owner@example.test')}`
  const reader = `app_session=${await signIn(target, 'reader@example.test')}`
  const post = async (path: string, body: unknown): Promise<{ data: { id: string } }> => await (await fetch(`${target.url}${path}`, { method: 'POST', headers: { cookie: owner, 'content-type': 'application/json' }, body: JSON.stringify(body) })).json() as { data: { id: string } }
  const roomId = (await post('/api/rooms', { name: 'bench', isPublic: true })).data.id
  for (let i = 0; i < 50; i++) await post('/api/sparks', { roomId, title: `spark ${i}`, content: 'x'.repeat(200), x: (i % 10) * 220, y: Math.floor(i / 10) * 140 })
  await fetch(`${target.url}/api/sparks?roomId=${roomId}`, { headers: { cookie: reader } }) // the reader joins
  return { label, target, reader, roomId }
}

const targets = [await serve('base', baseline), await serve('hidden', here)]
const scenarios: Array<{ name: string, path: (s: Served) => string }> = [
  { name: 'GET /api/rooms/:roomId', path: (s) => `/api/rooms/${s.roomId}` },
  { name: 'ListSparks (GET /api/sparks, 50)', path: (s) => `/api/sparks?roomId=${s.roomId}&limit=50` }
]
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN
for (const scenario of scenarios) {
  const results = new Map<string, Measurement[]>(targets.map((t) => [t.label, []]))
  const ratios: number[] = []
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? targets : [...targets].reverse()
    const got = new Map<string, Measurement>()
    for (const s of order) {
      const m = await measure({ url: `${s.target.url}${scenario.path(s)}`, headers: { cookie: s.reader }, duration })
      got.set(s.label, m)
      results.get(s.label)?.push(m)
    }
    ratios.push((got.get('hidden')?.rps ?? NaN) / (got.get('base')?.rps ?? NaN))
  }
  for (const s of targets) {
    const ms = results.get(s.label) ?? []
    const bad = ms.reduce((n, m) => n + m.errors + m.non2xx, 0)
    console.log(`${scenario.name.padEnd(36)} ${s.label.padEnd(7)} ${median(ms.map((m) => m.rps)).toFixed(0).padStart(7)} req/s  p99 ${median(ms.map((m) => m.p99))} ms${bad > 0 ? `  (errors/non-2xx ${bad})` : ''}`)
  }
  console.log(`${scenario.name.padEnd(36)} ratio hidden/base ${median(ratios).toFixed(3)}× (rounds: ${ratios.map((r) => r.toFixed(3)).join(', ')})`)
}
for (const s of targets) await s.target.stop()
