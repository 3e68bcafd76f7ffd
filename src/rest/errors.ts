// AppError → HTTP status and `{ error, message, details }` (SPEC Errors, REST): one table.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AppError, type ErrorKind } from '../core/errors.js'

const STATUS: Record<ErrorKind, { status: number, error: string }> = {
  validation: { status: 400, error: 'ValidationError' },
  invalid_token: { status: 400, error: 'InvalidToken' },
  unauthenticated: { status: 401, error: 'Unauthorized' },
  session_expired: { status: 401, error: 'Session expired' },
  forbidden: { status: 403, error: 'Forbidden' },
  not_found: { status: 404, error: 'NotFound' },
  conflict: { status: 409, error: 'Conflict' },
  precondition: { status: 409, error: 'FailedPrecondition' },
  aborted: { status: 409, error: 'Conflict' },
  limit_reached: { status: 409, error: 'LimitReached' },
  rate_limited: { status: 429, error: 'Rate limit exceeded' },
  unavailable: { status: 503, error: 'ServiceUnavailable' }
}

/** Names for the client errors Fastify itself raises (bad JSON, wrong content type, body too large). */
const HTTP_ERROR_NAMES: Record<number, string> = {
  400: 'BadRequest',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  413: 'PayloadTooLarge',
  415: 'UnsupportedMediaType'
}

export interface RestErrorBody {
  error: string
  message: string
  details?: Array<{ field: string, issue: string }>
  retryAfter?: number
}

export function restError (error: AppError): { status: number, body: RestErrorBody } {
  const { status, error: name } = STATUS[error.kind]
  const body: RestErrorBody = { error: name, message: error.message }
  if (error.kind === 'validation' || error.violations.length > 0) {
    body.details = error.violations.map((v) => ({ field: v.field, issue: v.description }))
  }
  if (error.retryAfter !== undefined) body.retryAfter = error.retryAfter
  return { status, body }
}

export async function sendAppError (reply: FastifyReply, error: AppError): Promise<FastifyReply> {
  const { status, body } = restError(error)
  if (error.retryAfter !== undefined) void reply.header('retry-after', String(error.retryAfter))
  return await reply.code(status).type('application/json; charset=utf-8').send(body)
}

export function installRestErrorHandler (app: FastifyInstance): void {
  app.setErrorHandler(async (error: FastifyError | AppError, request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof AppError) return await sendAppError(reply, error)
    const status = error.statusCode
    if (status !== undefined && status >= 400 && status < 500) {
      return await reply.code(status).send({ error: HTTP_ERROR_NAMES[status] ?? 'BadRequest', message: error.message })
    }
    request.log.error({ err: error }, 'unhandled error')
    return await reply.code(500).send({ error: 'InternalServerError', message: 'An unexpected error occurred.' })
  })
}
