// The RPC side of the limiter: the same `hit` as REST, fed with the Fastify request that carries
// the call (handed over through the call's context values) and the method's tier from the policy
// table. The over-limit call becomes RESOURCE_EXHAUSTED with Retry-After (src/rpc/errors.ts).
import { createContextKey, type ContextValues } from '@connectrpc/connect'
import type { FastifyRequest } from 'fastify'
import type { AppError } from '../core/errors.js'
import { rateLimitedError, rateLimitHeaders, type Limiter } from '../ratelimit/limiter.js'
import type { Tier } from '../ratelimit/tiers.js'

/** The Fastify request of the call: its socket and forwarding headers give the client address. */
export const httpRequestKey = createContextKey<FastifyRequest | null>(null, { description: 'Fastify request' })

export interface CallLimit {
  /** Rate-limit headers for the reply, success or error alike (empty for `exempt`). */
  headers: Array<[string, string]>
  /** Set when the call is over its limit: the handler must not run. */
  rejection: AppError | undefined
}

export async function limitCall (limiter: Limiter, contextValues: ContextValues, tier: Tier, userId: string | null): Promise<CallLimit> {
  const http = contextValues.get(httpRequestKey)
  if (http === null) throw new Error('RPC call without its Fastify request: contextValues is not configured')
  const decision = await limiter.hit(http, tier, userId)
  if (decision === null) return { headers: [], rejection: undefined }
  return { headers: rateLimitHeaders(decision), rejection: decision.allowed ? undefined : rateLimitedError(decision) }
}
