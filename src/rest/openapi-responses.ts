// What a REST route can answer besides its success, derived — never listed by hand per route — from
// its catalogue entry (src/core/operations.ts: access class, tier, the refusals of its own) and the
// route itself (an id in its path, a body, `idempotent`, `etag`, an If-Match header), each mapped to
// its status by the one REST error table (src/rest/errors.ts). openapi.ts declares the result.
import type { ErrorKind } from '../core/errors.js'
import { accessOn, SUSPENDED_MAY_CALL, type OperationId, type OperationPolicy } from '../core/operations.js'
import { restReplyOf, type HttpRefusal } from './errors.js'

export type Refusal = ErrorKind | HttpRefusal

/** What the document needs to know of a route beyond its schema. */
export interface RouteFacts {
  operation: OperationId
  policy: OperationPolicy
  method: string
  /** Its path parameters, e.g. `['roomId']`. */
  pathParams: readonly string[]
  /** The route reads a multipart form (an upload). */
  multipart: boolean
  idempotent: boolean
  /** Its answers carry an ETag. */
  etag: boolean
  /** It takes If-Match. */
  conditional: boolean
}

/** Methods whose requests Fastify reads a body for (so: 413, 415, 408 on a slow body). */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/** Why each refusal happens, as the document says it. */
const WHY: Record<Refusal, string> = {
  validation: '`ValidationError`: `details` names each invalid field',
  invalid_token: '`InvalidToken`: the token is unknown, used or expired',
  unauthenticated: '`Unauthorized`: no valid credential',
  session_expired: '`Session expired`',
  forbidden: '`Forbidden`: the caller may not do this',
  suspended: '`AccountSuspended`: the account is suspended (read GET /api/messages, appeal)',
  not_found: '`NotFound`: it does not exist, or the caller may not see it',
  conflict: '`Conflict`: it exists already',
  precondition: "`FailedPrecondition`: not allowed in the resource's current state",
  aborted: '`Conflict`: a concurrent request won or is still running; retry (see Retry-After)',
  stale_version: '`PreconditionFailed`: If-Match names a version that is no longer current; reload and retry',
  limit_reached: '`LimitReached`: a documented bound on how many may exist',
  quota_exceeded: '`QuotaExceeded`: your storage quota is used up',
  unreadable_file: '`UnreadableFile`: the file is damaged, encrypted, of an unsupported type, or too complex to parse within its memory and time bounds',
  idempotency_mismatch: '`IdempotencyKeyReused`: this Idempotency-Key came with another request',
  rate_limited: '`Rate limit exceeded`: see Retry-After',
  unavailable: '`ServiceUnavailable`: a dependency is down or the service is busy; retry after Retry-After',
  not_configured: '`ServiceUnavailable`: this deployment has not set the feature up',
  bad_request: '`BadRequest`: the request could not be read (malformed JSON, path or form)',
  route_not_found: '`NotFound`',
  method_not_allowed: '`MethodNotAllowed`',
  not_acceptable: '`NotAcceptable`',
  request_timeout: '`RequestTimeout`',
  payload_too_large: '`PayloadTooLarge`: the body is over its limit',
  unsupported_media_type: '`UnsupportedMediaType`: the body is not in a media type this route reads',
  headers_too_large: '`RequestHeaderFieldsTooLarge`',
  internal: '`InternalServerError`'
}

/** Every refusal the route can answer, in a stable order. */
export function refusalsOf (facts: RouteFacts): Refusal[] {
  const { policy, method } = facts
  const access = accessOn(policy, 'rest')
  const found = new Set<Refusal>(['validation', 'bad_request', 'unavailable'])
  if (access === 'required' || access === 'optional') {
    found.add('unauthenticated').add('session_expired')
    if (!SUSPENDED_MAY_CALL.has(facts.operation)) found.add('suspended').add('forbidden')
  }
  if (access === 'admin' || access === 'super_admin') found.add('unauthenticated').add('forbidden').add('not_configured')
  if (policy.tier !== 'exempt') found.add('rate_limited')
  if (facts.pathParams.some((name) => name.endsWith('Id'))) found.add('not_found')
  if (BODY_METHODS.has(method)) found.add('payload_too_large').add('unsupported_media_type')
  if (facts.idempotent) found.add('aborted').add('idempotency_mismatch')
  for (const kind of policy.refusals) found.add(kind)
  return [...found]
}

/** The refusals grouped by the status REST answers them with, each with its description. */
export function refusalsByStatus (refusals: readonly Refusal[]): Map<number, string> {
  const byStatus = new Map<number, string[]>()
  for (const refusal of refusals) {
    const { status } = restReplyOf(refusal)
    byStatus.set(status, [...byStatus.get(status) ?? [], WHY[refusal]])
  }
  return new Map([...byStatus].sort(([a], [b]) => a - b).map(([status, why]) => [status, [...new Set(why)].join('; ')]))
}
