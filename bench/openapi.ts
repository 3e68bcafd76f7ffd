// OpenAPI generation against start-up (issue 39; goal: not measurable next to start-up). Each round
// builds the app as production runs it (from dist/, embedded database in a fresh DATA_DIR, or
// DATABASE_URL), times buildApp + ready, then the first GET /openapi.json (the document is built on
// its first request and kept: start-up itself builds none of it) and a second one (the kept
// document). Prints the medians and generation as a share of start-up.
//   npx tsx bench/openapi.ts            (BENCH_ROUNDS=7 by default)
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildDist, importBuilt, BENCH_JWT_SECRET } from './harness.js'

const rounds = Number(process.env.BENCH_ROUNDS ?? 7)
buildDist()
const { buildApp, loadConfig } = await importBuilt()

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN
const startups: number[] = []
const firsts: number[] = []
const kept: number[] = []
let size = 0
for (let round = 0; round < rounds; round++) {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-openapi-'))
  const started = performance.now()
  const app = await buildApp(loadConfig({ NODE_ENV: 'production', DATA_DIR: dataDir, DATABASE_URL: process.env.DATABASE_URL, LOG_LEVEL: 'silent', JWT_SECRET: BENCH_JWT_SECRET, EXPOSE: 'internal' }))
  await app.ready()
  startups.push(performance.now() - started)
  const first = performance.now()
  const answer = await app.inject({ method: 'GET', url: '/openapi.json' })
  firsts.push(performance.now() - first)
  if (answer.statusCode !== 200) throw new Error(`GET /openapi.json answered ${answer.statusCode}`)
  size = answer.body.length
  const again = performance.now()
  await app.inject({ method: 'GET', url: '/openapi.json' })
  kept.push(performance.now() - again)
  await app.close()
  rmSync(dataDir, { recursive: true, force: true })
}
const startup = median(startups)
const generation = median(firsts)
console.log(`rounds ${rounds} · ${process.env.DATABASE_URL === undefined ? 'PGlite' : 'Postgres'} · document ${Math.round(size / 1024)} KiB`)
console.log(`start-up (buildApp + ready): median ${startup.toFixed(0)} ms (${startups.map((ms) => ms.toFixed(0)).join(', ')})`)
console.log(`first GET /openapi.json (builds the document): median ${generation.toFixed(1)} ms (${firsts.map((ms) => ms.toFixed(1)).join(', ')})`)
console.log(`second GET /openapi.json (the kept document): median ${median(kept).toFixed(1)} ms`)
console.log(`generation / start-up: ${(generation / startup).toFixed(3)}× (paid on the first request for the document, not at start)`)
