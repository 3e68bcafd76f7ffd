// AppError → ConnectError (SPEC Errors, RPC): one table. Validation failures carry a typed
// google.rpc.BadRequest detail; anything unexpected is masked as INTERNAL.
import { create } from '@bufbuild/protobuf'
import type { JsonValue } from '@bufbuild/protobuf'
import { Code, ConnectError } from '@connectrpc/connect'
import { errorToJson } from '@connectrpc/connect/protocol-connect'
import type { FastifyError, FastifyInstance } from 'fastify'
import { AppError, type ErrorKind } from '../core/errors.js'
import { BadRequestSchema } from '../gen/google/rpc/error_details_pb.js'

const CODE: Record<ErrorKind, Code> = {
  validation: Code.InvalidArgument,
  invalid_token: Code.InvalidArgument,
  unauthenticated: Code.Unauthenticated,
  session_expired: Code.Unauthenticated,
  forbidden: Code.PermissionDenied,
  not_found: Code.NotFound,
  conflict: Code.AlreadyExists,
  precondition: Code.FailedPrecondition,
  aborted: Code.Aborted,
  limit_reached: Code.FailedPrecondition,
  rate_limited: Code.ResourceExhausted,
  unavailable: Code.Unavailable,
  // Not UNAVAILABLE, which clients retry: the deployment must change first.
  not_configured: Code.FailedPrecondition
}

export function toConnectError (error: unknown, logError: (error: unknown) => void): ConnectError {
  if (error instanceof ConnectError) return error
  if (error instanceof AppError) {
    const details = error.violations.length === 0
      ? []
      : [{ desc: BadRequestSchema, value: create(BadRequestSchema, { fieldViolations: error.violations.map((v) => ({ field: v.field, description: v.description })) }) }]
    const metadata = new Headers()
    if (error.retryAfter !== undefined) metadata.set('retry-after', String(error.retryAfter))
    return new ConnectError(error.message, CODE[error.kind], metadata, details)
  }
  logError(error)
  return new ConnectError('Internal error', Code.Internal)
}

/** An error as the Connect protocol's JSON body `{code, message}`, for replies made under /rpc before
 *  Connect sees the call (unknown procedure, unparsable path, a body Fastify refuses). */
export function connectErrorJson (code: Code, message: string): JsonValue {
  return errorToJson(new ConnectError(message, code), undefined)
}

/** Replies Fastify makes under /rpc before Connect sees the call, as Connect errors: an unknown
 *  procedure is 404 `unimplemented` (what a Connect client makes of a 404), a content type with no
 *  parser (415) or a body past the limit (413) keeps its status with a matching code. */
export function installRpcErrorReplies (app: FastifyInstance): void {
  app.setNotFoundHandler(async (request, reply) => {
    const path = request.url.split('?')[0] ?? ''
    return await reply.code(404).send(connectErrorJson(Code.Unimplemented, `No procedure ${request.method} ${path}`))
  })
  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    const status = error.statusCode ?? 500
    if (status >= 400 && status < 500) {
      const message = error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
        ? `Content-Type ${request.headers['content-type'] ?? '(none)'} is not served here: use application/json or application/proto (or gRPC, gRPC-Web).`
        : error.message
      return await reply.code(status).send(connectErrorJson(status === 413 ? Code.ResourceExhausted : Code.InvalidArgument, message))
    }
    request.log.error({ err: error }, 'unhandled error')
    return await reply.code(500).send(connectErrorJson(Code.Internal, 'Internal error'))
  })
}
