// The process: configuration → app → listen → graceful close on SIGTERM/SIGINT.
import { buildApp } from './app.js'
import { ConfigError, loadConfig } from './config.js'

let config
try {
  config = loadConfig()
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(`Invalid configuration: ${error.message}`)
    process.exit(1)
  }
  throw error
}

const app = await buildApp(config)
await app.listen({ port: config.port, host: config.host })

let closing = false
async function shutdown (signal: string): Promise<void> {
  if (closing) return
  closing = true
  app.log.info({ signal }, 'shutting down: no new connections, finishing in-flight requests')
  // A hung close must not hang the process forever.
  const force = setTimeout(() => { app.log.error('forced exit after 10 s'); process.exit(1) }, 10_000)
  force.unref()
  try {
    await app.close()
    process.exit(0)
  } catch (error) {
    app.log.error({ err: error }, 'error during shutdown')
    process.exit(1)
  }
}
process.on('SIGTERM', () => { void shutdown('SIGTERM') })
process.on('SIGINT', () => { void shutdown('SIGINT') })
