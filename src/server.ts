// The process: configuration → app → listen → graceful close on SIGTERM/SIGINT (after
// SHUTDOWN_DELAY_MS, if set, of serving on while /health says draining). Logs go to standard output
// through pino's asynchronous destination (a request never waits on the write), flushed whenever
// the process exits: after the close, on a forced exit, and on a crash.
import pino from 'pino'
import { buildApp } from './app.js'
import { ConfigError, loadConfig, type Config } from './config.js'

let config: Config
try {
  config = loadConfig()
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(`Invalid configuration: ${error.message}`)
    process.exit(1)
  }
  throw error
}

const logDestination = pino.destination({ sync: false })
/** Writes out what the asynchronous destination still holds; every exit path passes here. */
function flushLogs (): void {
  try {
    logDestination.flushSync()
  } catch {
    // Standard output is gone (a closed pipe): nothing more can be written anyway.
  }
}
process.on('exit', flushLogs)

const app = await buildApp(config, { logStream: logDestination })
// A crash is logged as `fatal` and written out before the process ends (exit code 1, as Node's own).
process.on('uncaughtException', (error, origin) => {
  app.log.fatal({ err: error, origin }, 'crashed')
  process.exit(1)
})
await app.listen({ port: config.port, host: config.host })

/** How long closing may take once the listener begins to close (the listener cuts what is still
 *  open after 8 s, src/app.ts); a hung close must not hang the process forever. */
const CLOSE_BOUND_MS = 10_000

let closing = false
async function shutdown (signal: string): Promise<void> {
  if (closing) return
  closing = true
  const delayMs = config.shutdownDelayMs
  // /health answers 503 `draining` at once; with SHUTDOWN_DELAY_MS everything else is served as
  // before for that long, so load balancers see the health check fail and stop sending first.
  app.drain()
  app.log.info({ signal, delayMs }, delayMs === 0
    ? 'shutting down: no new connections, finishing in-flight requests'
    : `shutting down: /health answers draining; serving on for ${delayMs} ms, then no new connections`)
  const force = setTimeout(() => { app.log.error(`forced exit ${delayMs + CLOSE_BOUND_MS} ms after ${signal}`); process.exit(1) }, delayMs + CLOSE_BOUND_MS)
  force.unref()
  try {
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs))
    app.log.info('closing the listener')
    await app.close()
    process.exit(0)
  } catch (error) {
    app.log.error({ err: error }, 'error during shutdown')
    process.exit(1)
  }
}
process.on('SIGTERM', () => { void shutdown('SIGTERM') })
process.on('SIGINT', () => { void shutdown('SIGINT') })
