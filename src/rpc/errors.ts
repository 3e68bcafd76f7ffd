// AppError → ConnectError (SPEC Errors, RPC): one table. Validation failures carry a typed
// google.rpc.BadRequest detail; anything unexpected is masked as INTERNAL.
import { create } from '@bufbuild/protobuf'
import { Code, ConnectError } from '@connectrpc/connect'
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
  rate_limited: Code.ResourceExhausted,
  unavailable: Code.Unavailable
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
