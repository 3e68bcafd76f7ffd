// Every REST request passes one gate before its handler, in this order: the caller is resolved, the
// request is counted against its route's rate-limit tier (keyed by that caller, else the client
// address), then the route's access is enforced — so refused requests are counted and carry the
// rate-limit headers too, and the request over the limit gets its 429 before the handler runs
// (SPEC Limits rule 3). One hook rather than three: the order is visible here, and each request
// pays for one hook and one read of its route's options.
import type { FastifyInstance } from 'fastify'
import { AppError } from '../core/errors.js'
import type { Core } from '../core/index.js'
import { rateLimitedError, rateLimitHeaders, type Limiter } from '../ratelimit/limiter.js'
import { sendAppError } from './errors.js'
import { resolveIdentity } from './identity.js'

export function installRequestGate (app: FastifyInstance, core: Core, limiter: Limiter | undefined): void {
  app.decorateRequest('actor', null)
  app.addHook('onRequest', async (request, reply) => {
    const { access = 'required', tier = 'standard' } = request.routeOptions.config
    const identityError = access === 'public' ? null : await resolveIdentity(core, request)

    if (limiter !== undefined) {
      const decision = await limiter.hit(request, tier, request.actor?.userId ?? null)
      if (decision !== null) {
        for (const [name, value] of rateLimitHeaders(decision)) void reply.header(name, value)
        if (!decision.allowed) return await sendAppError(reply, rateLimitedError(decision))
      }
    }

    if (identityError !== null) return await sendAppError(reply, identityError)
    if (access === 'required' && request.actor === null) {
      return await sendAppError(reply, new AppError('unauthenticated', 'Sign in to continue.'))
    }
  })
}
