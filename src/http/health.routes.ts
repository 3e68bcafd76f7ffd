// GET /health on both gateways. With the REST API exposed it answers the REST report (with storage
// and uptime, a superset); the public RPC gateway alone answers database and cache only. The report
// comes from memory, refreshed at most once a second (health-monitor.ts). From SIGTERM on it answers
// 503 with status `draining`.
import type { FastifyInstance } from 'fastify'
import type { HealthMonitor } from './health-monitor.js'

export const HEALTH_OPERATION = 'health.check'

export function healthRoute (monitor: HealthMonitor, draining: () => boolean) {
  return async function (app: FastifyInstance): Promise<void> {
    // Exempt from rate limiting (SPEC tiers): load balancers and monitors poll it.
    app.get('/health', { config: { operation: HEALTH_OPERATION } }, async (_request, reply) => {
      const current = await monitor.report()
      // A leaving instance (SIGTERM) tells load balancers to stop sending to it, whatever its parts say.
      if (draining()) return await reply.code(503).send({ ...current, status: 'draining' })
      return await reply.code(current.status === 'unhealthy' ? 503 : 200).send(current)
    })
  }
}

/** Answers of other routes that say a dependency failed (503, or gRPC's UNAVAILABLE in headers)
 *  make the next /health probe at once. */
export function watchForFailures (app: FastifyInstance, monitor: HealthMonitor): void {
  app.addHook('onResponse', (request, reply, done) => {
    if ((reply.statusCode === 503 || reply.getHeader('grpc-status') === '14') && request.routeOptions.config.operation !== HEALTH_OPERATION) monitor.failureSeen()
    done()
  })
}
