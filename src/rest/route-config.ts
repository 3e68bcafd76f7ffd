// What every REST route declares besides its schema: who may call it and its rate-limit tier.
import type { Access } from '../admission.js'
import type { Actor } from '../core/actor.js'
import type { Tier } from '../ratelimit/tiers.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access
    tier?: Tier
  }
  interface FastifyRequest {
    /** The caller, when the request carries a valid session cookie or Bearer token. */
    actor: Actor | null
  }
}

export const SESSION_COOKIE = 'app_session'
