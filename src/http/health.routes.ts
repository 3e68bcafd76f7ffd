// GET /health on both gateways. With the REST API exposed it answers the REST report (with storage
// and uptime, a superset); the public RPC gateway alone answers database and cache only. From SIGTERM
// on it answers 503 with status `draining`.
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { healthReport, type HealthProbe, type HealthReport } from '../core/health.js'
import type { Clock } from '../infra/clock.js'

export function healthRoute (probes: Record<string, HealthProbe>, clock: Clock, withUptime: boolean, draining: () => boolean) {
  const startedAt = Date.now()
  // Health is exempt from rate limiting, so it must stay cheap under a flood: requests that arrive
  // while a probe round is running share its result instead of starting their own.
  let running: Promise<HealthReport> | undefined
  async function report (): Promise<HealthReport> {
    if (running === undefined) {
      const uptime = withUptime ? Math.round((Date.now() - startedAt) / 1000) : undefined
      running = healthReport(probes, clock.now(), uptime).finally(() => { running = undefined })
    }
    return await running
  }
  return async function (app: FastifyInstance): Promise<void> {
    // Exempt from rate limiting (SPEC tiers): load balancers and monitors poll it.
    const report200 = Type.Object({ status: Type.String() }, { additionalProperties: true, description: 'healthy or degraded, with each part' })
    const report503 = Type.Object({ status: Type.String() }, { additionalProperties: true, description: 'unhealthy or draining' })
    app.get('/health', { schema: { summary: 'Health of this instance and its dependencies', tags: ['health'], response: { 200: report200, 503: report503 } }, config: { operation: 'health.check' } }, async (_request, reply) => {
      const current = await report()
      // A leaving instance (SIGTERM) tells load balancers to stop sending to it, whatever its parts say.
      if (draining()) return await reply.code(503).send({ ...current, status: 'draining' })
      return await reply.code(current.status === 'unhealthy' ? 503 : 200).send(current)
    })
  }
}
