// Idempotency-Key (issue 33, DECISIONS §15): a token of at most 255 visible characters that makes a
// create safe to retry, on REST (its header) and RPC (the same request header).

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

/** A stored answer: its status (HTTP status on REST, 200 on RPC), headers to send again, its body. */
export interface StoredAnswer {
  status: number
  headers: Record<string, string>
  body: string
}

/** The caller runs the operation and then `finish`es (or `release`s, when it failed on our side). */
export interface FirstRun {
  kind: 'first'
  finish (answer: StoredAnswer): Promise<void>
  release (): Promise<void>
}

export interface Replay {
  kind: 'replay'
  answer: StoredAnswer
}

export type Claim = FirstRun | Replay
