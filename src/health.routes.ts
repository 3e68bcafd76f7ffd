// GET /health on both gateways. With the REST API exposed it answers the REST report (with storage
// and uptime, a superset); the public RPC gateway alone answers database and cache only.
import type { FastifyInstance } from 'fastify'
import { healthReport, type HealthProbe } from './core/health.js'
import type { Clock } from './infra/clock.js'

export function healthRoute (probes: Record<string, HealthProbe>, clock: Clock, withUptime: boolean) {
  const startedAt = Date.now()
  return async function (app: FastifyInstance): Promise<void> {
    // Exempt from rate limiting (SPEC tiers): load balancers and monitors poll it.
    app.get('/health', { config: { access: 'public', tier: 'exempt' } }, async (_request, reply) => {
      const uptime = withUptime ? Math.round((Date.now() - startedAt) / 1000) : undefined
      const report = await healthReport(probes, clock.now(), uptime)
      return await reply.code(report.status === 'unhealthy' ? 503 : 200).send(report)
    })
  }
}
