// Every REST error reply (SPEC Errors, REST: `{ error, message, details }`) comes from the one table
// below: the core's error kinds, and the refusals HTTP itself makes before any operation runs (a body
// that is not JSON, an unknown path, a request too slow to arrive, …). The error handler, the gate,
// the not-found handler, framework errors and the HTTP parser's errors all answer through it.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AppError, asAppError, PayloadTooLargeError, type ErrorKind } from '../core/errors.js'
import type { RefusalWriter } from '../http/refusals.js'

/** Refusals of HTTP itself, before any operation (or the core) sees the request. */
export type HttpRefusal = 'bad_request' | 'route_not_found' | 'method_not_allowed' | 'request_timeout' | 'not_acceptable'
  | 'payload_too_large' | 'unsupported_media_type' | 'headers_too_large' | 'internal'

const REPLIES: Record<ErrorKind | HttpRefusal, { status: number, error: string }> = {
  validation: { status: 400, error: 'ValidationError' },
  unreadable_file: { status: 400, error: 'UnreadableFile' },
  invalid_token: { status: 400, error: 'InvalidToken' },
  unauthenticated: { status: 401, error: 'Unauthorized' },
  session_expired: { status: 401, error: 'Session expired' },
  forbidden: { status: 403, error: 'Forbidden' },
  suspended: { status: 403, error: 'AccountSuspended' },
  not_found: { status: 404, error: 'NotFound' },
  conflict: { status: 409, error: 'Conflict' },
  precondition: { status: 409, error: 'FailedPrecondition' },
  aborted: { status: 409, error: 'Conflict' },
  // RFC 9110: a stale If-Match is 412 (DECISIONS §17).
  stale_version: { status: 412, error: 'PreconditionFailed' },
  limit_reached: { status: 409, error: 'LimitReached' },
  quota_exceeded: { status: 413, error: 'QuotaExceeded' },
  idempotency_mismatch: { status: 422, error: 'IdempotencyKeyReused' },
  rate_limited: { status: 429, error: 'Rate limit exceeded' },
  unavailable: { status: 503, error: 'ServiceUnavailable' },
  not_configured: { status: 503, error: 'ServiceUnavailable' },
  bad_request: { status: 400, error: 'BadRequest' },
  route_not_found: { status: 404, error: 'NotFound' },
  method_not_allowed: { status: 405, error: 'MethodNotAllowed' },
  not_acceptable: { status: 406, error: 'NotAcceptable' },
  request_timeout: { status: 408, error: 'RequestTimeout' },
  payload_too_large: { status: 413, error: 'PayloadTooLarge' },
  unsupported_media_type: { status: 415, error: 'UnsupportedMediaType' },
  headers_too_large: { status: 431, error: 'RequestHeaderFieldsTooLarge' },
  internal: { status: 500, error: 'InternalServerError' }
}

/** The refusal a client error status Fastify raises stands for (bad JSON 400, body too large 413, …). */
const REFUSAL_OF_STATUS = new Map<number, HttpRefusal>([
  [400, 'bad_request'], [404, 'route_not_found'], [405, 'method_not_allowed'], [406, 'not_acceptable'],
  [408, 'request_timeout'], [413, 'payload_too_large'], [415, 'unsupported_media_type'], [431, 'headers_too_large']
])

export interface RestErrorBody {
  error: string
  message: string
  details?: Array<{ field: string, issue: string }>
  retryAfter?: number
  /** On 5xx answers: the request's X-Request-Id, to quote when reporting it (DECISIONS §15). */
  requestId?: string
}

export interface RestErrorReply { status: number, body: RestErrorBody }

/** The status and `error` name REST answers a core error kind or an HTTP refusal with (the OpenAPI
 *  document declares each operation's answers from it). */
export function restReplyOf (reason: ErrorKind | HttpRefusal): { status: number, error: string } {
  return REPLIES[reason]
}

export function restRefusal (reason: HttpRefusal, message: string): RestErrorReply {
  const { status, error } = REPLIES[reason]
  return { status, body: { error, message } }
}

/** The REST envelope of the refusals the edge makes by itself (src/http/refusals.ts). */
export const restRefusalWriter: RefusalWriter = (reason, message) => {
  const { status, body } = restRefusal(reason, message)
  return { status, contentType: JSON_TYPE, body: JSON.stringify(body) }
}

const JSON_TYPE = 'application/json; charset=utf-8'

export function restError (error: AppError): RestErrorReply {
  const { status, error: name } = error instanceof PayloadTooLargeError ? REPLIES.payload_too_large : REPLIES[error.kind]
  const body: RestErrorBody = { error: name, message: error.message }
  if (error.kind === 'validation' || error.violations.length > 0) {
    body.details = error.violations.map((v) => ({ field: v.field, issue: v.description }))
  }
  if (error.retryAfter !== undefined) body.retryAfter = error.retryAfter
  return { status, body }
}

export async function sendRestError (reply: FastifyReply, { status, body }: RestErrorReply): Promise<FastifyReply> {
  if (body.retryAfter !== undefined) void reply.header('retry-after', String(body.retryAfter))
  const sent = status >= 500 ? { ...body, requestId: reply.request.id } : body
  return await reply.code(status).type(JSON_TYPE).send(sent)
}

export async function sendAppError (reply: FastifyReply, error: AppError): Promise<FastifyReply> {
  return await sendRestError(reply, restError(error))
}

/** The reply to any error a REST route or hook throws; nothing unexpected ever shows its text. */
export function restErrorOf (thrown: FastifyError | AppError): RestErrorReply {
  const error = asAppError(thrown) as FastifyError | AppError
  if (error instanceof AppError) return restError(error)
  const status = error.statusCode ?? 500
  if (status < 400 || status >= 500) return restRefusal('internal', 'An unexpected error occurred.')
  return restRefusal(REFUSAL_OF_STATUS.get(status) ?? 'bad_request', error.message)
}

export function installRestErrorHandler (app: FastifyInstance): void {
  app.setErrorHandler(async (error: FastifyError | AppError, request: FastifyRequest, reply: FastifyReply) => {
    const answer = restErrorOf(error)
    if (answer.status >= 500 && !(asAppError(error) instanceof AppError)) request.log.error({ err: error }, 'unhandled error')
    return await sendRestError(reply, answer)
  })
}
