// Whether a request may reach its handler: the one rule both gateways apply, in an onRequest hook,
// before the body is read. Its operation's entry in the catalogue (src/core/operations.ts) says the
// access class and tier; then, in this order, the presented credential is resolved to a caller, the
// request is counted against its tier (keyed by that caller, else by the client address), and access
// is enforced. Refused requests are therefore counted and carry the rate-limit headers too, a
// request over its limit is refused before its handler runs (SPEC Limits rule 3), and a malformed
// body cannot escape its count. Each transport supplies how it reads a credential and how it answers
// a refusal; a route that names no operation stops the app from starting.
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import type { Actor } from '../core/actor.js'
import type { AdminRequest } from '../core/admin/audit.js'
import type { AdminPrincipal } from '../core/admin/admin-tokens.js'
import { AppError, accountSuspended, asAppError } from '../core/errors.js'
import type { Core } from '../core/index.js'
import { accessOn, isOperationId, OPERATIONS, SUSPENDED_MAY_CALL, type Access, type OperationId, type Tier, type Transport } from '../core/operations.js'
import { rateLimitedError, rateLimitHeaders, type Limiter } from '../ratelimit/limiter.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's entry in the catalogue (src/core/operations.ts). */
    operation?: OperationId
    /** Its access class on this route's transport and its tier, set when the route is registered. */
    admission?: AdmissionPolicy
  }
  interface FastifyRequest {
    /** The caller, when the request carries a valid credential. */
    actor: Actor | null
    /** The administrator, on an admin route that admitted the request (DECISIONS §12). */
    admin: AdminRequest | null
  }
}

/** The token of an `Authorization: Bearer <token>` header; undefined for any other or an empty one. */
export function bearerTokenOf (header: string | null | undefined): string | undefined {
  if (header === null || header === undefined || !/^Bearer\s+/i.test(header)) return undefined
  const token = header.replace(/^Bearer\s+/i, '').trim()
  return token === '' ? undefined : token
}

export interface Admission {
  /** The caller, when a valid credential was presented. */
  actor: Actor | null
  /** Rate-limit headers for the reply, refused or not (none for `exempt` or without a limiter). */
  headers: Array<[string, string]>
  /** Why the request must not run: over its limit, a refused credential, or none where one is required. */
  refusal: AppError | null
}

/** An operation's class on the request's transport, and its tier. */
export interface AdmissionPolicy {
  access: Access
  tier: Tier
  /** A suspended user may call it (DECISIONS §11: read why, appeal, sign out). */
  suspendedMayCall: boolean
  /** The route's transport (metrics and traces label requests with it). */
  transport: Transport
}

export async function admit (core: Core, limiter: Limiter | undefined, request: FastifyRequest, policy: AdmissionPolicy, credential: string | undefined, credentialRequired: string): Promise<Admission> {
  let actor: Actor | null = null
  let identityError: AppError | null = null
  if (policy.access !== 'public' && credential !== undefined) {
    try {
      actor = await core.auth.authenticate(credential)
    } catch (error) {
      const refusal = asAppError(error)
      if (!(refusal instanceof AppError)) throw error
      identityError = refusal
    }
  }

  let headers: Array<[string, string]> = []
  if (limiter !== undefined) {
    const decision = await limiter.hit(request, policy.tier, actor?.userId ?? null)
    if (decision !== null) {
      headers = rateLimitHeaders(decision)
      if (!decision.allowed) return { actor, headers, refusal: rateLimitedError(decision) }
    }
  }

  if (identityError !== null) return { actor, headers, refusal: identityError }
  if (policy.access === 'required' && actor === null) return { actor, headers, refusal: new AppError('unauthenticated', credentialRequired) }
  if (actor?.suspended === true && !policy.suspendedMayCall) return { actor, headers, refusal: accountSuspended() }
  return { actor, headers, refusal: null }
}

/**
 * An admin route (access `admin` / `super_admin`): only an `Authorization: Bearer` token of the OIDC
 * provider is read — a session cookie is never looked at, so it can never grant admin rights. The
 * token is verified first, so the request counts under the token's `sub` (else the client address);
 * then a verified token without the role is refused by the core, which audits the refusal.
 */
export async function admitAdmin (core: Core, limiter: Limiter | undefined, request: FastifyRequest, policy: AdminPolicy): Promise<Admission & { admin: AdminRequest | null }> {
  let principal: AdminPrincipal | null = null
  let identityError: AppError | null = null
  try {
    principal = await core.admin.authenticate(bearerTokenOf(request.headers.authorization))
  } catch (error) {
    if (!(error instanceof AppError)) throw error
    identityError = error
  }

  let headers: Array<[string, string]> = []
  if (limiter !== undefined) {
    const decision = await limiter.hit(request, policy.tier, principal === null ? null : `admin:${principal.sub}`)
    if (decision !== null) {
      headers = rateLimitHeaders(decision)
      if (!decision.allowed) return { actor: null, admin: null, headers, refusal: rateLimitedError(decision) }
    }
  }

  if (principal === null) return { actor: null, admin: null, headers, refusal: identityError }
  try {
    const admin = await core.admin.authorize(principal, policy.access, {
      operation: request.routeOptions.config.operation ?? 'admin',
      requestId: request.id,
      clientIp: request.clientIp,
      params: request.params
    })
    return { actor: null, admin, headers, refusal: null }
  } catch (error) {
    if (!(error instanceof AppError)) throw error
    return { actor: null, admin: null, headers, refusal: error }
  }
}

export interface AdminPolicy extends AdmissionPolicy {
  access: 'admin' | 'super_admin'
}

function isAdminPolicy (policy: AdmissionPolicy): policy is AdminPolicy {
  return policy.access === 'admin' || policy.access === 'super_admin'
}

/** What differs between the transports at the gate. */
export interface GateOptions {
  /** Which access class of a catalogue entry applies (they differ where SPEC says so). */
  transport: Transport
  core: Core
  limiter: Limiter | undefined
  /** The session cookie or Bearer token the request presents, if any. */
  credentialOf (request: FastifyRequest): string | undefined
  /** What an anonymous caller of a Required operation is told (each transport names its credential). */
  credentialRequired: string
  /** Sends the refusal in the transport's envelope. */
  refuse (request: FastifyRequest, reply: FastifyReply, error: AppError): Promise<FastifyReply> | FastifyReply
  /** The operation of a route that does not name one in its config (RPC routes: from their path). */
  operationOf?: (route: RouteOptions) => string | undefined
}

/** Installs the gate on every route of `scope`, and refuses to register a route without an operation. */
export function installAdmission (scope: FastifyInstance, options: GateOptions): void {
  const { transport, core, limiter, credentialOf, credentialRequired, refuse } = options
  scope.addHook('onRoute', (route) => {
    // CORS preflights are answered by @fastify/cors before any gate.
    if (route.method === 'OPTIONS' || (Array.isArray(route.method) && route.method.every((m) => m === 'OPTIONS'))) return
    const operation = route.config?.operation ?? options.operationOf?.(route)
    if (!isOperationId(operation)) {
      throw new Error(`${String(route.method)} ${route.url}: no operation in the catalogue (src/core/operations.ts) for ${String(operation)}`)
    }
    const policy = OPERATIONS[operation]
    route.config = { ...route.config, operation, admission: { access: accessOn(policy, transport), tier: policy.tier, suspendedMayCall: SUSPENDED_MAY_CALL.has(operation), transport } }
  })
  scope.decorateRequest('actor', null)
  scope.decorateRequest('admin', null)
  scope.addHook('onRequest', async (request, reply) => {
    const policy = request.routeOptions.config.admission
    if (policy === undefined) return // not a route of this scope (a 404 or a preflight)
    if (isAdminPolicy(policy)) {
      const admission = await admitAdmin(core, limiter, request, policy)
      request.admin = admission.admin
      for (const [name, value] of admission.headers) void reply.header(name, value)
      if (admission.refusal !== null) return await refuse(request, reply, admission.refusal)
      return
    }
    const admission = await admit(core, limiter, request, policy, credentialOf(request), credentialRequired)
    request.actor = admission.actor
    for (const [name, value] of admission.headers) void reply.header(name, value)
    if (admission.refusal !== null) return await refuse(request, reply, admission.refusal)
  })
}
