// The service as bench/sse.ts runs it: like `serve.ts service` (tier limits raised: one bench user
// sends thousands of requests; logs at `info` on stdout, which the parent reads and drops), started
// with --expose-gc so the parent can ask for a collection and the resident size after it
// ({ cmd: 'rss' } over IPC, with the number of open streams), which makes per-stream memory measurable.
import { UNLIMITED_TIERS, importBuilt } from './harness.js'

const { buildApp, loadConfig } = await importBuilt()
// Logs at `info` as `npm start` writes them (LOG_LEVEL=silent for the figures beside).
const app = await buildApp(loadConfig({ LOG_LEVEL: 'info', ...process.env, PORT: '0', HOST: '127.0.0.1' }), { rateLimit: { maxOverride: UNLIMITED_TIERS } })
console.log(`listening ${await app.listen({ port: 0, host: '127.0.0.1' })}`)

const collect = (globalThis as { gc?: () => void }).gc
process.on('message', (message: { cmd?: string }) => {
  if (message.cmd !== 'rss') return
  for (let i = 0; i < 3; i++) collect?.()
  const memory = process.memoryUsage()
  process.send?.({ rss: memory.rss, heap: memory.heapUsed + memory.external, streams: app.live.streams.size })
})
process.on('SIGTERM', () => { void app.close().then(() => process.exit(0)) })
