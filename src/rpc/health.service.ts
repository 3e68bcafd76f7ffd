// grpc.health.v1.Health (DECISIONS §17): what Kubernetes' gRPC probes, grpc_health_probe and gRPC
// clients' own health checking call. It reports the state GET /health reports (src/http/health.routes.ts):
// SERVING while healthy or degraded, NOT_SERVING while unhealthy or draining (from SIGTERM on). The
// empty name (the whole server) and the name of every service the gateway serves report the same;
// another name is NOT_FOUND for Check and SERVICE_UNKNOWN for Watch, which the protocol keeps open.
//
// Watch sends the state at once, then each change. One timer serves every Watch: while any is open it
// wakes them once a second, and each reads the state from the report kept in memory (refreshed no
// faster, health-monitor.ts) and sends it when it changed. When the server closes, every Watch sends NOT_SERVING (if it
// has not yet) and ends, so no call holds the close up. At most MAX_WATCHES are open at once per
// instance; past that a Watch is RESOURCE_EXHAUSTED (clients retry it with backoff, as the protocol
// says of any status but UNIMPLEMENTED).
import { create } from '@bufbuild/protobuf'
import { Code, ConnectError, type ServiceImpl } from '@connectrpc/connect'
import { Health, HealthCheckResponse_ServingStatus as Status, HealthCheckResponseSchema, type HealthCheckResponse } from '../gen/grpc/health/v1/health_pb.js'
import type { HealthMonitor } from '../http/health-monitor.js'

/** How often open Watch calls read the state. */
export const WATCH_EVERY_MS = 1_000
/** The most Watch calls open at once on an instance. */
export const MAX_WATCHES = 1_000

/** Where the state comes from: the /health report and whether the instance is leaving. */
export interface HealthSource {
  monitor: HealthMonitor
  draining: () => boolean
}

export interface HealthServiceOptions extends HealthSource {
  /** The service names that report the server's state (besides the empty name). */
  services: readonly string[]
  /** Tests lower it. */
  maxWatches?: number | undefined
}

export interface HealthService {
  impl: ServiceImpl<typeof Health>
  /** Ends every Watch (the server is closing). */
  close: () => void
}

export async function servingStatus (source: HealthSource): Promise<Status> {
  if (source.draining()) return Status.NOT_SERVING
  const report = await source.monitor.report()
  return source.draining() || report.status === 'unhealthy' ? Status.NOT_SERVING : Status.SERVING
}

export function healthService (options: HealthServiceOptions): HealthService {
  const known = new Set(['', ...options.services])
  const maxWatches = options.maxWatches ?? MAX_WATCHES
  const watch = stateWatch()

  const response = (status: Status): HealthCheckResponse => create(HealthCheckResponseSchema, { status })

  const impl: ServiceImpl<typeof Health> = {
    async check (request) {
      if (!known.has(request.service)) throw new ConnectError(`unknown service ${request.service}`, Code.NotFound)
      return response(await servingStatus(options))
    },
    async * watch (request, context) {
      if (watch.open >= maxWatches) throw new ConnectError(`${maxWatches} health watches are open on this instance; retry later`, Code.ResourceExhausted)
      const watcher = watch.join(context.signal)
      try {
        if (!known.has(request.service)) {
          yield response(Status.SERVICE_UNKNOWN)
          await watcher.ended
          return
        }
        let sent: Status | undefined
        for (;;) {
          const status = watch.closed ? Status.NOT_SERVING : await servingStatus(options)
          if (status !== sent) yield response(sent = status)
          if (watch.closed || context.signal.aborted) return
          await watcher.next()
        }
      } finally {
        watcher.leave()
      }
    }
  }
  return { impl, close: watch.close }
}

interface Watcher {
  /** Resolves at the next tick, when the server closes, or when the call is aborted. */
  next: () => Promise<void>
  /** Resolves when the server closes or the call is aborted. */
  ended: Promise<void>
  leave: () => void
}

/** The one timer of every open Watch. */
function stateWatch () {
  const wakes = new Set<() => void>()
  let timer: NodeJS.Timeout | undefined
  let closed = false
  let closing: () => void = () => {}
  const closedPromise = new Promise<void>((resolve) => { closing = resolve })

  const tick = (): void => { for (const wake of [...wakes]) wake() }
  return {
    get open () { return wakes.size },
    get closed () { return closed },
    close (): void {
      closed = true
      closing()
      tick()
    },
    join (signal: AbortSignal): Watcher {
      const aborted = new Promise<void>((resolve) => {
        if (signal.aborted) resolve()
        else signal.addEventListener('abort', () => { resolve() }, { once: true })
      })
      const ended = Promise.race([closedPromise, aborted])
      let wake: () => void = () => {}
      const entry = (): void => { wake() }
      wakes.add(entry)
      if (timer === undefined) {
        timer = setInterval(tick, WATCH_EVERY_MS)
        timer.unref()
      }
      return {
        next: async () => { await Promise.race([new Promise<void>((resolve) => { wake = resolve }), ended]) },
        ended,
        leave: () => {
          wakes.delete(entry)
          if (wakes.size === 0 && timer !== undefined) {
            clearInterval(timer)
            timer = undefined
          }
        }
      }
    }
  }
}
