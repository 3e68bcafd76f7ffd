// Every RPC error reply comes from the mapping here, in Connect's two steps: what went wrong → a
// Connect code (one table: the core's AppError kinds and the gateway's own refusals), then the code →
// the HTTP status of a Connect-protocol reply (the protocol's own table, Connect's codeToHttpStatus;
// gRPC and gRPC-Web carry the code itself). Refusals Fastify makes under /rpc before Connect sees the
// call keep Fastify's status (a Connect client reads a 404 as `unimplemented`) and take their code
// from the same table. Validation failures carry a typed google.rpc.BadRequest detail; anything
// unexpected is masked as INTERNAL.
import { create } from '@bufbuild/protobuf'
import type { JsonValue, JsonWriteOptions } from '@bufbuild/protobuf'
import { Code, ConnectError } from '@connectrpc/connect'
import { codeToHttpStatus, errorToJson, errorToJsonBytes } from '@connectrpc/connect/protocol-connect'
import type { FastifyError, FastifyInstance } from 'fastify'
import { AppError, asAppError, PayloadTooLargeError, type ErrorKind } from '../core/errors.js'
import type { EdgeRefusal, RefusalWriter } from '../http/refusals.js'
import { BadRequestSchema } from '../gen/google/rpc/error_details_pb.js'
import { isGrpcCall, sendGrpcRefusal } from './grpc-refusal.js'
import { noteRpcOutcome } from './outcome.js'

/** What the gateway refuses by itself, before or beside any operation. */
export type RpcRefusal =
  | 'malformed_body' // a body that is no message of its method, or does not decompress
  | 'body_too_large' // past the read limit, before or after decompression
  | 'no_procedure' // a path under /rpc that names no method
  | 'unsupported_media_type' // a content type no RPC protocol reads
  | 'bad_request' // any other request Fastify refuses
  | 'internal'

const CODE: Record<ErrorKind | RpcRefusal, Code> = {
  validation: Code.InvalidArgument,
  unreadable_file: Code.InvalidArgument,
  invalid_token: Code.InvalidArgument,
  unauthenticated: Code.Unauthenticated,
  session_expired: Code.Unauthenticated,
  forbidden: Code.PermissionDenied,
  suspended: Code.PermissionDenied,
  not_found: Code.NotFound,
  conflict: Code.AlreadyExists,
  precondition: Code.FailedPrecondition,
  aborted: Code.Aborted,
  stale_version: Code.Aborted,
  limit_reached: Code.FailedPrecondition,
  // No RPC method stores files today (uploads are REST only); the errors table's word for a used-up quota.
  quota_exceeded: Code.ResourceExhausted,
  idempotency_mismatch: Code.InvalidArgument,
  rate_limited: Code.ResourceExhausted,
  unavailable: Code.Unavailable,
  // Not UNAVAILABLE, which clients retry: the deployment must change first.
  not_configured: Code.FailedPrecondition,
  malformed_body: Code.InvalidArgument,
  body_too_large: Code.ResourceExhausted,
  no_procedure: Code.Unimplemented,
  unsupported_media_type: Code.InvalidArgument,
  bad_request: Code.InvalidArgument,
  internal: Code.Internal
}

/** The refusal a client error status Fastify raises under /rpc stands for (others: bad_request). */
const REFUSAL_OF_STATUS = new Map<number, RpcRefusal>([[413, 'body_too_large'], [415, 'unsupported_media_type']])

/** The HTTP status of a Connect-protocol error reply with this code. */
export function httpStatusOf (code: Code): number {
  return codeToHttpStatus(code)
}

export function rpcRefusal (reason: RpcRefusal, message: string): ConnectError {
  return new ConnectError(message, CODE[reason])
}

/** The edge's refusals under /rpc, in the gateway's words (a path that routes nowhere is a missing procedure). */
const REFUSAL_OF_EDGE: Record<EdgeRefusal, RpcRefusal> = {
  bad_request: 'bad_request',
  route_not_found: 'no_procedure',
  method_not_allowed: 'bad_request',
  request_timeout: 'bad_request',
  headers_too_large: 'bad_request'
}

/** Connect's error JSON for the refusals the edge makes by itself under /rpc (src/http/refusals.ts). */
export const rpcRefusalWriter: RefusalWriter = (reason, message) => {
  const { status, body } = connectErrorReply(rpcRefusal(REFUSAL_OF_EDGE[reason], message))
  return { status, contentType: 'application/json', body: Buffer.from(body).toString('utf8') }
}

/** An error leaving a handler: AppError by the table, ConnectError as it is, anything else masked. */
export function toConnectError (thrown: unknown, logError: (error: unknown) => void): ConnectError {
  const error = asAppError(thrown)
  if (error instanceof ConnectError) return error
  if (error instanceof AppError) {
    const details = error.violations.length === 0
      ? []
      : [{ desc: BadRequestSchema, value: create(BadRequestSchema, { fieldViolations: error.violations.map((v) => ({ field: v.field, description: v.description })) }) }]
    const metadata = new Headers()
    if (error.retryAfter !== undefined) metadata.set('retry-after', String(error.retryAfter))
    // A file over its size limit reads as a body over the read limit does (REST: 413 for both).
    const code = error instanceof PayloadTooLargeError ? CODE.body_too_large : CODE[error.kind]
    return new ConnectError(error.message, code, metadata, details)
  }
  logError(error)
  return rpcRefusal('internal', 'Internal error')
}

/** An error raised outside the handler (decoding the request, encoding the reply), as Connect's own
 *  handler words it: a ConnectError as it is, anything else `internal error`. */
export function connectErrorOf (reason: unknown): ConnectError {
  return reason instanceof ConnectError ? reason : new ConnectError('internal error', CODE.internal, undefined, undefined, reason)
}

/** A Connect-protocol error reply: the code's status (or Fastify's own, for its refusals) and the error JSON. */
export function connectErrorReply (error: ConnectError, jsonOptions?: Partial<JsonWriteOptions>, status = httpStatusOf(error.code)): { status: number, body: Uint8Array } {
  return { status, body: errorToJsonBytes(error, jsonOptions) }
}

/** Replies Fastify makes under /rpc before Connect sees the call, as Connect errors: an unknown
 *  procedure is 404 `unimplemented` (what a Connect client makes of a 404), a content type with no
 *  parser (415) or a body past the limit (413) keeps its status with the code of its refusal. */
export function installRpcErrorReplies (app: FastifyInstance): void {
  // A gRPC or gRPC-Web call takes the code in its own trailers-only reply (HTTP 200): a strict gRPC
  // client reads a 404 as UNIMPLEMENTED without the message, and a JSON body as a broken stream.
  app.setNotFoundHandler(async (request, reply) => {
    // The path the client sent: a call at a standard path is served under /rpc (standard-paths.ts).
    const path = request.originalUrl.split('?')[0] ?? ''
    const message = `No procedure ${request.method} ${path}`
    noteRpcOutcome(request, CODE.no_procedure, 404)
    if (isGrpcCall(request)) return await sendGrpcRefusal(request, reply, rpcRefusal('no_procedure', message))
    return await reply.code(404).send(refusalJson('no_procedure', message))
  })
  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    const status = error.statusCode ?? 500
    let refusal: RpcRefusal = 'internal'
    let message = 'Internal error'
    if (status >= 400 && status < 500) {
      refusal = REFUSAL_OF_STATUS.get(status) ?? 'bad_request'
      message = error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
        ? `Content-Type ${request.headers['content-type'] ?? '(none)'} is not served here: use application/json or application/proto (or gRPC, gRPC-Web).`
        : error.message
    } else {
      request.log.error({ err: error }, 'unhandled error')
    }
    noteRpcOutcome(request, CODE[refusal], refusal === 'internal' ? 500 : status)
    if (isGrpcCall(request)) return await sendGrpcRefusal(request, reply, rpcRefusal(refusal, message))
    return await reply.code(refusal === 'internal' ? 500 : status).send(refusalJson(refusal, message))
  })
}

function refusalJson (reason: RpcRefusal, message: string): JsonValue {
  return errorToJson(rpcRefusal(reason, message), undefined)
}
