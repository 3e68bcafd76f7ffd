// Idempotency-Key for creates, on both transports (issue 33, DECISIONS §15 and §17). A transport
// opens a call for a request that carries a key, runs its handler within it, and settles it once
// answered; the create operation the handler calls is `keyed` (keyed-call.ts): the first request
// with a key runs and its outcome is kept with the request's fingerprint, a retry with the same key
// and the same request gets that outcome again, whatever instance it reaches; the same key with
// another request is refused; a retry while the first still runs waits for its outcome, and after a
// while is told 409 with Retry-After — never a second execution. A first run that failed on our side
// (5xx) frees the key, as nothing was created. Keys are per user (or administrator); expired ones
// are pruned by src/core/retention/ (in batches, one instance at a time), through this folder's repository.
import { validationError } from '../errors.js'
import type { CoreDeps } from '../deps.js'
import { IDEMPOTENCY_FIELD, IDEMPOTENCY_KEY_MAX, IDEMPOTENCY_KEY_PATTERN, type KeyOwner } from './idempotency.types.js'
import { claimBeforeBody, forget, KeyedCall, runWithin } from './keyed-call.js'
import { logThrottled } from '../../infra/throttled-log.js'

export function createIdempotency (deps: Pick<CoreDeps, 'db' | 'clock' | 'log'>) {
  const { log } = deps

  return {
    /** The key a request carries, checked; undefined when it carries none. */
    parseKey (raw: string | readonly string[] | null | undefined): string | undefined {
      if (raw === undefined || raw === null) return undefined
      if (typeof raw !== 'string') throw validationError(IDEMPOTENCY_FIELD, 'must be sent once')
      if (raw.length > IDEMPOTENCY_KEY_MAX) throw validationError(IDEMPOTENCY_FIELD, `must be at most ${IDEMPOTENCY_KEY_MAX} characters`)
      if (!IDEMPOTENCY_KEY_PATTERN.test(raw)) throw validationError(IDEMPOTENCY_FIELD, 'must be 1 or more visible ASCII characters (no spaces)')
      return raw
    },

    /**
     * A call for a request with `key`, within `scope` (the transport's route or method). With
     * `claimNow` the key is claimed at once, before the request's body is read (so a retry that
     * arrives whole cannot overtake a slow first request); otherwise the create operation claims it.
     */
    async open (owner: KeyOwner, key: string, scope: string, options: { claimNow: boolean }): Promise<KeyedCall> {
      const call = new KeyedCall(owner, key, scope)
      if (options.claimNow) await claimBeforeBody(deps, call)
      return call
    },

    /** Runs a request's handler within its call: the keyed operation it calls runs or answers again. */
    within<T> (call: KeyedCall, work: () => T): T {
      return runWithin(call, work)
    },

    /** Once the request is answered: a claim whose operation kept no outcome (it never ran: the
     *  request was refused first, or its body never arrived) is freed. */
    async settle (call: KeyedCall): Promise<void> {
      await forget(deps, call).catch((error: unknown) => { logThrottled(log, 'warn', 'idempotency: freeing a key failed', { err: error }) })
    }
  }
}

export type Idempotency = ReturnType<typeof createIdempotency>
