// Idempotency-Key for creates, on both transports (issue 33, DECISIONS §15). The first request with
// a key claims it (one row per user and key; the primary key admits one), runs, and stores its answer;
// a retry with the same key and the same request gets that answer again, whatever instance it reaches;
// the same key with another request is refused; a retry while the first still runs waits for its
// answer, and after WAIT_MS is told 409 — never a second execution. A first run that failed on our
// side (5xx) frees the key, as nothing was created. Keys are per user; expired ones are pruned.
import { createHash } from 'node:crypto'
import { AppError, validationError } from '../errors.js'
import type { CoreDeps } from '../deps.js'
import { claimKey, findKey, pruneExpiredKeys, releaseKey, storeAnswer, type KeyRef } from './idempotency.repository.js'
import { IDEMPOTENCY_FIELD, IDEMPOTENCY_KEY_MAX, IDEMPOTENCY_KEY_PATTERN, IDEMPOTENCY_TTL_MS, type Claim, type StoredAnswer } from './idempotency.types.js'
import { logThrottled } from '../../infra/throttled-log.js'

/** How long a retry waits for the first request's answer before it is told 409. */
const WAIT_MS = 5_000
/** Expired keys are pruned at most this often per instance, in batches of PRUNE_BATCH. */
const PRUNE_EVERY_MS = 10 * 60 * 1000
const PRUNE_BATCH = 1_000

/** JSON with object keys sorted, so `{a, b}` and `{b, a}` are the same request. */
function stableJson (value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

/** What makes two requests "the same": the transport's route or method and the request itself. */
export function requestFingerprint (scope: string, request: unknown): string {
  const hash = createHash('sha256').update(scope).update('\n')
  hash.update(request instanceof Uint8Array ? request : stableJson(request))
  return hash.digest('base64url')
}

const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

export function createIdempotency (deps: Pick<CoreDeps, 'db' | 'clock' | 'log'>) {
  const { db, clock, log } = deps
  let lastPrune = 0

  /** Expired rows go, a batch at a time, in the background of a claim. */
  function pruneNow (now: Date): void {
    if (now.getTime() - lastPrune < PRUNE_EVERY_MS) return
    lastPrune = now.getTime()
    pruneExpiredKeys(db, now, PRUNE_BATCH).catch((error: unknown) => { logThrottled(log, 'warn', 'idempotency keys: prune failed', { err: error }) })
  }

  function firstRun (ref: KeyRef): Claim {
    return {
      kind: 'first',
      finish: async (answer: StoredAnswer) => { await storeAnswer(db, ref, answer) },
      release: async () => { await releaseKey(db, ref) }
    }
  }

  return {
    /** The key a request carries, checked; undefined when it carries none. */
    parseKey (raw: string | readonly string[] | null | undefined): string | undefined {
      if (raw === undefined || raw === null) return undefined
      if (typeof raw !== 'string') throw validationError(IDEMPOTENCY_FIELD, 'must be sent once')
      if (raw.length > IDEMPOTENCY_KEY_MAX) throw validationError(IDEMPOTENCY_FIELD, `must be at most ${IDEMPOTENCY_KEY_MAX} characters`)
      if (!IDEMPOTENCY_KEY_PATTERN.test(raw)) throw validationError(IDEMPOTENCY_FIELD, 'must be 1 or more visible ASCII characters (no spaces)')
      return raw
    },

    /** Claims `key` for this user and request: run it first, or replay the stored answer. */
    async claim (userId: string, key: string, fingerprint: string): Promise<Claim> {
      const ref = { userId, key }
      const deadline = Date.now() + WAIT_MS
      let pause = 20
      for (;;) {
        const now = clock.now()
        pruneNow(now)
        if (await claimKey(db, ref, { fingerprint, now, expiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS) })) return firstRun(ref)
        const row = await findKey(db, ref)
        // Gone between the two statements (released after a failure, or pruned): claim it again.
        if (row !== undefined) {
          if (row.fingerprint !== fingerprint) {
            throw new AppError('idempotency_mismatch', `${IDEMPOTENCY_FIELD}: this key was used with a different request`, [{ field: IDEMPOTENCY_FIELD, description: 'was used with a different request' }])
          }
          if (row.answer !== null) return { kind: 'replay', answer: row.answer }
          if (Date.now() >= deadline) throw new AppError('aborted', 'A request with this Idempotency-Key is still in progress; retry later.')
        }
        await sleep(pause)
        pause = Math.min(pause * 2, 250)
      }
    }
  }
}

export type Idempotency = ReturnType<typeof createIdempotency>
