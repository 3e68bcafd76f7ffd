// Idempotency-Key (issue 33, DECISIONS §15 and §17): a token of at most 255 visible characters that
// makes a create safe to retry, on REST (its header) and RPC (the same request header).

/** DECISIONS §15: at most 255 characters. */
export const IDEMPOTENCY_KEY_MAX = 255

/** Visible ASCII only (RFC 9110 token-like: no spaces, no control characters). */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]+$/

/** The header's name on both transports (lower case, as Node and Connect read headers). */
export const IDEMPOTENCY_HEADER = 'idempotency-key'
/** The field a refusal names. */
export const IDEMPOTENCY_FIELD = 'Idempotency-Key'

/** How long a first answer is kept and replayed. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000

/** How long a retry of a request still running waits for its outcome before it is told 409. */
export const IDEMPOTENCY_WAIT_MS = 5_000
/** The Retry-After of that 409, in seconds. */
export const IN_FLIGHT_RETRY_AFTER_S = 1

/** Whose key it is: keys are per user (`id` is the user's id) or per administrator (`admin:<sub>`,
 *  no account). */
export interface KeyOwner {
  id: string
  accountId: string | null
}
