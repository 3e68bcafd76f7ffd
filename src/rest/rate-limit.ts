// The REST side of the limiter: runs after the caller is resolved and before the access check, so
// anonymous 401s are counted too; every response of a limited route carries the rate-limit headers,
// and the request over the limit gets the 429 body before its handler runs (SPEC Limits rule 3).
import type { FastifyInstance } from 'fastify'
import { rateLimitedError, rateLimitHeaders, type Limiter } from '../ratelimit/limiter.js'
import { sendAppError } from './errors.js'

export function installRateLimit (app: FastifyInstance, limiter: Limiter): void {
  app.addHook('onRequest', async (request, reply) => {
    const decision = await limiter.hit(request, request.routeOptions.config.tier ?? 'standard', request.actor?.userId ?? null)
    if (decision === null) return
    for (const [name, value] of rateLimitHeaders(decision)) void reply.header(name, value)
    if (!decision.allowed) return await sendAppError(reply, rateLimitedError(decision))
  })
}
