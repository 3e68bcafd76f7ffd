// Every REST request passes one gate before its handler: src/admission.ts decides (caller, then rate
// limit, then access); here its answer becomes the route's caller, the rate-limit headers and, when
// refused, the error reply.
import type { FastifyInstance } from 'fastify'
import { admit } from '../admission.js'
import type { Core } from '../core/index.js'
import type { Limiter } from '../ratelimit/limiter.js'
import { sendAppError } from './errors.js'
import { credentialOf } from './identity.js'

export function installRequestGate (app: FastifyInstance, core: Core, limiter: Limiter | undefined): void {
  app.decorateRequest('actor', null)
  app.addHook('onRequest', async (request, reply) => {
    const { access = 'required', tier = 'standard' } = request.routeOptions.config
    const admission = await admit(core, limiter, {
      access,
      tier,
      credential: access === 'public' ? undefined : credentialOf(request),
      http: request,
      credentialRequired: 'Sign in to continue.'
    })
    request.actor = admission.actor
    for (const [name, value] of admission.headers) void reply.header(name, value)
    if (admission.refusal !== null) return await sendAppError(reply, admission.refusal)
  })
}
