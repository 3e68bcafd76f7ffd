// Whether a request may reach its handler: the one rule both gateways apply before every route and
// method (the REST gate, src/rest/request-gate.ts, and the RPC interceptor, src/rpc/interceptors.ts).
// In this order: the presented credential is resolved to a caller; the request is counted against
// its rate-limit tier, keyed by that caller, else by the client address; then access is enforced.
// Refused requests are therefore counted and carry the rate-limit headers too, and a request over
// its limit is refused before its handler runs (SPEC Limits rule 3).
import type { FastifyRequest } from 'fastify'
import type { Actor } from './core/actor.js'
import { AppError } from './core/errors.js'
import type { Core } from './core/index.js'
import { rateLimitedError, rateLimitHeaders, type Limiter } from './ratelimit/limiter.js'
import type { Tier } from './ratelimit/tiers.js'

/** The token of an `Authorization: Bearer <token>` header; undefined for any other or an empty one. */
export function bearerTokenOf (header: string | null | undefined): string | undefined {
  if (header === null || header === undefined || !/^Bearer\s+/i.test(header)) return undefined
  const token = header.replace(/^Bearer\s+/i, '').trim()
  return token === '' ? undefined : token
}

/** public: no identity needed; optional: identity used when valid; required: refused without it. */
export type Access = 'public' | 'optional' | 'required'

export interface AdmissionRequest {
  access: Access
  tier: Tier
  /** The session cookie or Bearer token presented, if any. */
  credential: string | undefined
  /** The HTTP request carrying the call: the limiter reads the client address from it. */
  http: FastifyRequest
  /** What an anonymous caller of a Required route is told (each transport names its credential). */
  credentialRequired: string
}

export interface Admission {
  /** The caller, when a valid credential was presented. */
  actor: Actor | null
  /** Rate-limit headers for the reply, refused or not (none for `exempt` or without a limiter). */
  headers: Array<[string, string]>
  /** Why the request must not run: over its limit, a refused credential, or none where one is required. */
  refusal: AppError | null
}

export async function admit (core: Core, limiter: Limiter | undefined, request: AdmissionRequest): Promise<Admission> {
  let actor: Actor | null = null
  let identityError: AppError | null = null
  if (request.access !== 'public' && request.credential !== undefined) {
    try {
      actor = await core.auth.authenticate(request.credential)
    } catch (error) {
      if (!(error instanceof AppError)) throw error
      identityError = error
    }
  }

  let headers: Array<[string, string]> = []
  if (limiter !== undefined) {
    const decision = await limiter.hit(request.http, request.tier, actor?.userId ?? null)
    if (decision !== null) {
      headers = rateLimitHeaders(decision)
      if (!decision.allowed) return { actor, headers, refusal: rateLimitedError(decision) }
    }
  }

  if (identityError !== null) return { actor, headers, refusal: identityError }
  if (request.access === 'required' && actor === null) {
    return { actor, headers, refusal: new AppError('unauthenticated', request.credentialRequired) }
  }
  return { actor, headers, refusal: null }
}
