// One request that carries an Idempotency-Key, as the core runs it (DECISIONS §15, §17). A transport
// opens the call (src/core/idempotency/idempotency.ts: `open`, claiming the key at once when the
// request's body is still on its way) and runs its handler `within` it; the create operation the
// handler calls is `keyed`, and does one of three things:
//
// - first with the key: it runs, and its outcome (what it returned, or the 4xx refusal it ended
//   with) is kept with the request's fingerprint. An operation whose one transaction returns its
//   result (`resultOfTransaction`) keeps it in that transaction: when the key was not claimed before
//   (the body was already here), the outcome's INSERT is the transaction's last statement and is the
//   claim — one more statement, no more commits; when it was, an UPDATE. Other operations keep it
//   after they return.
// - a retry: it waits for the first run's outcome (at most IDEMPOTENCY_WAIT_MS, else 409 `aborted`
//   with Retry-After) and returns it again without running — the transport then answers exactly as
//   it did the first time (status, body, ETag) — or refuses it (422) when the fingerprints differ.
// - a retry that found the first run gone (it failed on our side, freeing the key): it runs.
//
// The fingerprint is the transport's scope (route or method) and everything the operation was
// given, so a retry must repeat the whole request; an upload's bytes are hashed as they stream
// (uploads.ts). A run that fails on our side keeps nothing and frees the key.
import { AsyncLocalStorage } from 'node:async_hooks'
import { createHash } from 'node:crypto'
import type { Db } from '../../db/database.js'
import type { StoredOutcome } from '../../db/schema.js'
import type { CoreDeps } from '../deps.js'
import { AppError, asAppError, PayloadTooLargeError, type ErrorKind } from '../errors.js'
import { claimKey, findKey, insertOutcome, releaseKey, updateOutcome, type KeyRef } from './idempotency.repository.js'
import { IDEMPOTENCY_FIELD, IDEMPOTENCY_TTL_MS, IDEMPOTENCY_WAIT_MS, IN_FLIGHT_RETRY_AFTER_S, type KeyOwner } from './idempotency.types.js'

type Deps = Pick<CoreDeps, 'db' | 'clock'>

/**
 * - `open`: nothing claimed yet (the operation claims it);
 * - `claimed`: this request holds the key (claimed before its body), its outcome not kept yet;
 * - `inserting`: its operation's transaction claims the key with its outcome;
 * - `held`: another request holds the key;
 * - `settled`: the outcome is kept, or was answered again.
 */
type CallState = 'open' | 'claimed' | 'inserting' | 'held' | 'settled'

export class KeyedCall {
  state: CallState = 'open'
  /** When this request claimed the key (its row's `created_at`): the claim's identity. */
  claimedAt: Date | undefined
  /** Its operation is running (an operation it calls is not keyed again). */
  running = false
  /** …and keeps its outcome in its first transaction, at this clock's time. */
  storing: { now: () => Date } | undefined
  fingerprint = ''
  /** The value kept by the operation's transaction once it committed, as JSON. */
  keptJson: string | undefined
  /** The outcome of another run was answered again. */
  replayed = false
  readonly ref: KeyRef

  constructor (owner: KeyOwner, key: string, readonly scope: string) {
    this.ref = { owner, key }
  }
}

const calls = new AsyncLocalStorage<KeyedCall>()

export function runWithin<T> (call: KeyedCall, work: () => T): T {
  return calls.run(call, work)
}

/** Thrown inside an operation's transaction when another request holds its key: the transaction rolls back. */
class KeyHeld extends Error {}

/**
 * For a transaction that starts now: how it keeps its value as the outcome of the keyed operation
 * it runs for (as its last statement), or undefined when it keeps none. Only an operation's first
 * transaction does.
 */
export function outcomeKeeper (): ((trx: Db, value: unknown) => Promise<void>) | undefined {
  const call = calls.getStore()
  const storing = call?.storing
  if (call === undefined || storing === undefined) return undefined
  call.storing = undefined
  return async (trx, value) => {
    const now = storing.now()
    const outcome: StoredOutcome = { value: value ?? null }
    if (call.state === 'inserting') {
      const expiresAt = new Date(now.getTime() + IDEMPOTENCY_TTL_MS)
      if (!await insertOutcome(trx, call.ref, { fingerprint: call.fingerprint, now, expiresAt }, outcome)) throw new KeyHeld()
      call.claimedAt = now
    } else if (call.claimedAt !== undefined) {
      await updateOutcome(trx, call.ref, call.claimedAt, call.fingerprint, outcome, false)
    }
    call.keptJson = JSON.stringify(outcome.value)
  }
}

/** What makes two requests "the same": the transport's scope and everything the operation was given. */
export function fingerprintOf (scope: string, input: unknown, bytesDigest?: string): string {
  const hash = createHash('sha256').update(scope).update('\n').update(stableJson(input))
  if (bytesDigest !== undefined) hash.update('\n').update(bytesDigest)
  return hash.digest('base64url')
}

/** JSON with object keys sorted, so `{a, b}` and `{b, a}` are the same request; bytes (a file read
 *  whole) stand as their hash. */
function stableJson (value: unknown): string {
  if (value instanceof Uint8Array) return JSON.stringify(`sha256:${createHash('sha256').update(value).digest('base64url')}`)
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

/** The keyed call this operation runs in, when it is one still to decide. */
export function pendingCall (): KeyedCall | undefined {
  const call = calls.getStore()
  return call === undefined || call.state === 'settled' || call.running ? undefined : call
}

/** Refusals kept and answered again: the client's own mistakes. Ours (5xx), a rate limit, a
 *  conflict of retries, are not: the same request may succeed later. */
const NOT_KEPT = new Set<ErrorKind>(['unavailable', 'not_configured', 'rate_limited', 'aborted', 'idempotency_mismatch'])

function keptRefusal (error: unknown): StoredOutcome | undefined {
  const refusal = asAppError(error)
  if (!(refusal instanceof AppError) || NOT_KEPT.has(refusal.kind)) return undefined
  return {
    error: {
      kind: refusal.kind,
      message: refusal.message,
      violations: refusal.violations.map((v) => ({ field: v.field, description: v.description })),
      ...(refusal.retryAfter === undefined ? {} : { retryAfter: refusal.retryAfter }),
      ...(refusal instanceof PayloadTooLargeError ? { tooLarge: true } : {})
    }
  }
}

function refusalOf (kept: Extract<StoredOutcome, { error: unknown }>['error']): AppError {
  if (kept.tooLarge === true) {
    const violation = kept.violations[0]
    if (violation !== undefined) return new PayloadTooLargeError(violation.field, violation.description)
  }
  return new AppError(kept.kind as ErrorKind, kept.message, kept.violations, kept.retryAfter)
}

const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))

export interface KeyedOptions {
  /** The operation's one transaction returns its result: the outcome is kept in it. */
  resultOfTransaction?: boolean
}

/**
 * Runs `run` (an operation given `fingerprint`'s input) for `call`, or answers the first run's
 * outcome again; see the top of this file.
 */
export async function runKeyed<R> (deps: Deps, call: KeyedCall, fingerprint: string, options: KeyedOptions, run: () => Promise<R>): Promise<R> {
  const { db, clock } = deps
  for (;;) {
    if (call.state === 'open') {
      if (options.resultOfTransaction === true) {
        call.state = 'inserting'
      } else {
        const now = clock.now()
        if (await claimKey(db, call.ref, { fingerprint, now, expiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS) })) {
          call.state = 'claimed'
          call.claimedAt = now
        } else {
          call.state = 'held'
        }
      }
    }
    if (call.state === 'held') {
      const answer = await outcomeOfOther(deps, call, fingerprint)
      if (answer.kind === 'outcome') {
        call.state = 'settled'
        call.replayed = true
        if ('value' in answer.outcome) return answer.outcome.value as R
        throw refusalOf(answer.outcome.error)
      }
      call.state = 'open' // the first run is gone: this one runs
      continue
    }
    return await runFirst(deps, call, fingerprint, options, run)
  }
}

async function runFirst<R> (deps: Deps, call: KeyedCall, fingerprint: string, options: KeyedOptions, run: () => Promise<R>): Promise<R> {
  call.fingerprint = fingerprint
  call.storing = options.resultOfTransaction === true ? deps.clock : undefined
  call.running = true
  let result: R
  try {
    result = await run()
  } catch (error) {
    call.storing = undefined
    call.running = false
    if (error instanceof KeyHeld) {
      call.state = 'held'
      return await runKeyed(deps, call, fingerprint, options, run)
    }
    const kept = keptRefusal(error)
    if (kept !== undefined && await keep(deps, call, kept)) {
      call.state = 'settled'
      throw error
    }
    if (kept !== undefined) {
      // Another request holds the key (its work may be why this one was refused): its outcome stands.
      call.state = 'held'
      return await runKeyed(deps, call, fingerprint, options, run)
    }
    await forget(deps, call)
    throw error
  }
  call.storing = undefined
  call.running = false
  const outcome: StoredOutcome = { value: result ?? null }
  if (call.keptJson !== JSON.stringify(outcome.value) && !await keep(deps, call, outcome)) {
    // Only an operation that claimed nothing in its transaction gets here: it ran unclaimed.
    throw new AppError('aborted', 'A request with this Idempotency-Key ran at the same time; retry it to get its answer.', [], IN_FLIGHT_RETRY_AFTER_S)
  }
  call.state = 'settled'
  return result
}

/** Keeps `outcome` for this call's key, alone; false when another request holds it. */
async function keep (deps: Deps, call: KeyedCall, outcome: StoredOutcome): Promise<boolean> {
  if (call.claimedAt !== undefined) {
    await updateOutcome(deps.db, call.ref, call.claimedAt, call.fingerprint, outcome, true)
    return true
  }
  const now = deps.clock.now()
  const inserted = await insertOutcome(deps.db, call.ref, { fingerprint: call.fingerprint, now, expiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS) }, outcome)
  if (inserted) call.claimedAt = now
  return inserted
}

/** Frees this call's claim (nothing was done, or nothing is kept), if it holds one. */
export async function forget (deps: Deps, call: KeyedCall): Promise<void> {
  if (call.state === 'settled' || call.state === 'held' || call.claimedAt === undefined) return
  const claimedAt = call.claimedAt
  call.state = 'settled'
  await releaseKey(deps.db, call.ref, claimedAt)
}

type OtherAnswer = { kind: 'outcome', outcome: StoredOutcome } | { kind: 'gone' }

/** Waits for the outcome of the run that holds the key; refuses another request under it (422). */
async function outcomeOfOther (deps: Deps, call: KeyedCall, fingerprint: string): Promise<OtherAnswer> {
  const deadline = Date.now() + IDEMPOTENCY_WAIT_MS
  let pause = 20
  for (;;) {
    const row = await findKey(deps.db, call.ref, deps.clock.now())
    if (row === undefined) return { kind: 'gone' }
    if (row.outcome !== null) {
      if (row.fingerprint !== fingerprint) {
        throw new AppError('idempotency_mismatch', `${IDEMPOTENCY_FIELD}: this key was used with a different request`, [{ field: IDEMPOTENCY_FIELD, description: 'was used with a different request' }])
      }
      return { kind: 'outcome', outcome: row.outcome }
    }
    if (Date.now() >= deadline) {
      throw new AppError('aborted', `A request with this ${IDEMPOTENCY_FIELD} is still in progress; retry in ${IN_FLIGHT_RETRY_AFTER_S} s to get its answer.`, [], IN_FLIGHT_RETRY_AFTER_S)
    }
    await sleep(pause)
    pause = Math.min(pause * 2, 250)
  }
}

/** Claims the key for `call` now, before its request's body arrived. */
export async function claimBeforeBody (deps: Deps, call: KeyedCall): Promise<void> {
  const now = deps.clock.now()
  if (await claimKey(deps.db, call.ref, { fingerprint: '', now, expiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS) })) {
    call.state = 'claimed'
    call.claimedAt = now
  } else {
    call.state = 'held'
  }
}

/**
 * Wraps a create operation (`(actor, ...input)`): outside a keyed call it is the operation itself;
 * inside one it runs or answers again as above, its fingerprint taken from `input`.
 */
export function keyed<A, I extends unknown[], R> (deps: Deps, operation: (actor: A, ...input: I) => Promise<R>, options: KeyedOptions = {}): (actor: A, ...input: I) => Promise<R> {
  return async (actor, ...input) => {
    const call = pendingCall()
    if (call === undefined) return await operation(actor, ...input)
    return await runKeyed(deps, call, fingerprintOf(call.scope, input), options, async () => await operation(actor, ...input))
  }
}

/** For `keyed`: the operation's one transaction returns its result. */
export const ONE_TRANSACTION: KeyedOptions = { resultOfTransaction: true }
