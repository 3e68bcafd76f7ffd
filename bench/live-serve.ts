// The service as bench/live-stalls.ts runs it: as `npm start` does (logs at LOG_LEVEL, info unless
// told otherwise; the rate limiter on with tier limits raised, since one bench user sends thousands
// of requests), in its own process. Prints `listening <url>`; answers over IPC:
//   { cmd: 'prune' } → { removed, ms }: one run of the event log's pruning, as the hourly timer runs it.
//   { cmd: 'burst', spark, userId, events, bytes, tag }
//                    → { ms }: `events` `spark:updated` events of the spark, each with `bytes` of
//                      content and the title `burst-<tag>-<i>`, committed in one transaction through
//                      the core's publish path (no API call writes that many at once).
import { pathToFileURL } from 'node:url'
import { join } from 'node:path'
import { UNLIMITED_TIERS, builtModule, importBuilt } from './harness.js'
import type { Spark } from '../src/core/sparks/sparks.types.js'

const { buildApp, loadConfig } = await importBuilt()
const { inTransaction } = await import(pathToFileURL(builtModule(process.env.BENCH_SERVICE_ROOT ?? join(import.meta.dirname, '..'), 'core/transaction.js')).href) as typeof import('../src/core/transaction.js')
const app = await buildApp(loadConfig({ ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: process.env.LOG_LEVEL ?? 'info' }), { rateLimit: { maxOverride: UNLIMITED_TIERS } })
console.log(`listening ${await app.listen({ port: 0, host: '127.0.0.1' })}`)

type Command =
  | { cmd: 'prune' }
  | { cmd: 'burst', spark: Spark, userId: string, events: number, bytes: number, tag: string }

process.on('message', (message: Command) => {
  const started = performance.now()
  if (message.cmd === 'prune') {
    app.live.bus.prune().then((removed) => {
      process.send?.({ removed, ms: performance.now() - started })
    }, (error: unknown) => {
      process.send?.({ removed: -1, ms: performance.now() - started, error: String(error) })
    })
  } else if (message.cmd === 'burst') {
    const { spark, userId, events, bytes, tag } = message
    inTransaction(app.deps, async (tx) => {
      for (let i = 0; i < events; i++) {
        const title = `burst-${tag}-${i}`
        tx.publish('spark:updated', { ...spark, title, content: `${title} `.padEnd(bytes, 'abcdefghij') }, { audience: { kind: 'room', roomId: spark.roomId, sparkId: spark.id }, userId })
      }
    }).then(() => {
      process.send?.({ ms: performance.now() - started })
    }, (error: unknown) => {
      process.send?.({ ms: -1, error: String(error) })
    })
  }
})
process.on('SIGTERM', () => { void app.close().then(() => process.exit(0)) })
