// The one error type of the core. Each transport maps `kind` to its own status/code in one table
// (src/rest/errors.ts, src/rpc/errors.ts), after `asAppError` has mapped the errors of the layers
// below that have a meaning for callers (a database outage); anything else is masked as internal.
import { DatabaseUnavailableError } from '../db/outage-errors.js'

export type ErrorKind =
  | 'validation' // bad input; carries one violation per offending field
  | 'unreadable_file' // a file whose content cannot be read (a CV that is encrypted, damaged, a bomb, past its parse's memory or time); names the field
  | 'invalid_token' // a link, refresh or deletion token that is unknown, used or expired
  | 'unauthenticated'
  | 'session_expired'
  | 'forbidden'
  | 'suspended' // the caller's account is suspended (DECISIONS §11): REST 403 AccountSuspended, RPC PERMISSION_DENIED
  | 'not_found'
  | 'conflict' // duplicate or constraint
  | 'precondition' // the operation is not allowed in the resource's current state
  | 'aborted' // a concurrent change won (a layout whose tiles kept moving, a retry still in flight)
  | 'stale_version' // the version the caller based a change on is not the current one: REST 412 (If-Match), RPC ABORTED
  | 'limit_reached' // a documented bound on how many of a thing may exist (tiles in a room)
  | 'quota_exceeded' // what one user may keep is used up (UPLOAD_QUOTA_BYTES): REST 413 `QuotaExceeded`
  | 'rate_limited'
  | 'unavailable' // a dependency (database, mail, storage) is down, or the compute queue is full
  | 'idempotency_mismatch' // an Idempotency-Key reused with a different request
  | 'not_configured' // a feature this deployment has not set up (video/voice without RTC_APP_ID): retrying will not help

export interface FieldViolation {
  field: string
  description: string
}

export class AppError extends Error {
  constructor (
    readonly kind: ErrorKind,
    message: string,
    readonly violations: readonly FieldViolation[] = [],
    /** Seconds until a retry can succeed (rate limits, a full compute queue). */
    readonly retryAfter?: number
  ) {
    super(message)
    this.name = 'AppError'
  }
}

export function validationError (field: string, description: string): AppError {
  return new AppError('validation', `${field}: ${description}`, [{ field, description }])
}

/** A file the service cannot read (DECISIONS §17): REST 400 `UnreadableFile`, RPC INVALID_ARGUMENT,
 *  naming the field that carried it. */
export function unreadableFile (field: string, description: string): AppError {
  return new AppError('unreadable_file', `${field}: ${description}`, [{ field, description }])
}

export function notFound (what: string): AppError {
  return new AppError('not_found', `${what} not found`)
}

export function accountSuspended (): AppError {
  return new AppError('suspended', 'AccountSuspended: this account is suspended; read your messages (GET /api/messages) and appeal (POST /api/appeals).')
}

export function forbidden (message: string): AppError {
  return new AppError('forbidden', message)
}

/**
 * A file larger than its documented limit (uploads). Its kind is `limit_reached`; REST answers it
 * with 413 `PayloadTooLarge` rather than that kind's 409 (src/rest/errors.ts), as HTTP has a status
 * for exactly this.
 */
export class PayloadTooLargeError extends AppError {
  constructor (field: string, description: string) {
    super('limit_reached', `${field}: ${description}`, [{ field, description }])
    this.name = 'PayloadTooLargeError'
  }
}

/** `error` as the core answers it: the data layer's outage is `unavailable` (retry after 1 s); any
 *  other error is returned as it is. Transports call it before their tables. */
export function asAppError (error: unknown): unknown {
  if (error instanceof DatabaseUnavailableError) {
    const mapped = new AppError('unavailable', error.message, [], error.retryAfter)
    mapped.cause = error.cause
    return mapped
  }
  return error
}
