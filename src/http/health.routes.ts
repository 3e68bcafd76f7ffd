// GET /health on both gateways. With the REST API exposed it answers the REST report (with storage
// and uptime, a superset); the public RPC gateway alone answers database and cache only. The report
// comes from memory, refreshed at most once a second (health-monitor.ts). From SIGTERM on it answers
// 503 with status `draining`.
import type { FastifyInstance } from 'fastify'
import type { HealthMonitor } from './health-monitor.js'
import { Type } from 'typebox'

export const HEALTH_OPERATION = 'health.check'

/** The report (src/core/health.ts HealthReport), named for the OpenAPI document. */
const HealthReportSchema = Type.Object({
  status: Type.Union(['healthy', 'degraded', 'unhealthy', 'draining'].map((status) => Type.Literal(status))),
  timestamp: Type.String({ format: 'date-time' }),
  services: Type.Record(Type.String(), Type.Object({
    status: Type.Union(['healthy', 'degraded', 'unhealthy', 'delayed'].map((status) => Type.Literal(status))),
    latency: Type.Number({ description: 'Milliseconds the probe took' }),
    lag: Type.Optional(Type.Number({ description: 'With `delayed`: how late live events are, in ms' }))
  })),
  uptime: Type.Optional(Type.Integer({ description: 'Seconds since start (where the REST API is served)' }))
}, { $id: 'HealthReport', title: 'HealthReport' })

export function healthRoute (monitor: HealthMonitor, draining: () => boolean) {
  return async function (app: FastifyInstance): Promise<void> {
    // Exempt from rate limiting (SPEC tiers): load balancers and monitors poll it.
    const report200 = { ...HealthReportSchema, description: 'healthy or degraded, with each part' }
    const report503 = { ...HealthReportSchema, description: 'unhealthy or draining' }
    app.get('/health', { schema: { summary: 'Health of this instance and its dependencies', tags: ['health'], response: { 200: report200, 503: report503 } }, config: { operation: HEALTH_OPERATION } }, async (_request, reply) => {
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
