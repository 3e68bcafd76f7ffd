// The service as bench/live-stalls.ts runs it: as `npm start` does (logs at LOG_LEVEL, info unless
// told otherwise; the rate limiter on with tier limits raised, since one bench user sends thousands
// of requests), in its own process. Prints `listening <url>`; answers over IPC:
//   { cmd: 'prune' } → { removed, ms }: one run of the event log's pruning, as the hourly timer runs it.
import { UNLIMITED_TIERS, importBuilt } from './harness.js'

const { buildApp, loadConfig } = await importBuilt()
const app = await buildApp(loadConfig({ ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: process.env.LOG_LEVEL ?? 'info' }), { rateLimit: { maxOverride: UNLIMITED_TIERS } })
console.log(`listening ${await app.listen({ port: 0, host: '127.0.0.1' })}`)

process.on('message', (message: { cmd?: string }) => {
  if (message.cmd !== 'prune') return
  const started = performance.now()
  app.live.bus.prune().then((removed) => {
    process.send?.({ removed, ms: performance.now() - started })
  }, (error: unknown) => {
    process.send?.({ removed: -1, ms: performance.now() - started, error: String(error) })
  })
})
process.on('SIGTERM', () => { void app.close().then(() => process.exit(0)) })
