// The worker pool for CPU-heavy work (layouts now; CV parsing and classification later). A task runs
// on a worker thread, so however long it takes, the event loop keeps answering every other request.
// The pool is bounded on every side a caller could push on:
// - threads: a fixed number, so heavy work never takes every core from the event loop;
// - queue: at most `queue` tasks wait; the next is refused at once (503 / `unavailable` with
//   Retry-After) instead of growing a backlog whose callers have long given up;
// - time: each task kind has a limit, counted from submission (queue wait included), after which
//   its worker is stopped and the caller gets an error, so nothing waits forever;
// - memory: each worker's heap is capped; a task that exceeds it fails alone, the process lives on.
// A task kind that needs another memory cap gets a pool of its own from the same function.
import { fileURLToPath } from 'node:url'
import { Piscina } from 'piscina'
import { AppError } from '../core/errors.js'
import type { Logger } from '../infra/logger.js'

/** A worker module's default export: one input in, one result out (both cross threads as structured clones). */
export type WorkerFunction = (input: never) => unknown

export interface ComputeTaskSpec {
  /** Names the task in errors and logs, e.g. "layout". */
  readonly name: string
  /** Absolute path of the worker module (workerModule gives it). */
  readonly filename: string
  /** Longest a task may take from submission, queue wait included; then its worker is stopped. */
  readonly timeoutMs: number
}

export interface RunOptions {
  /** Aborts the task (removed from the queue, or its worker stopped); it rejects with the signal's reason. */
  readonly signal?: AbortSignal
  /** Objects in the input moved to the worker rather than copied (a MessagePort must be). */
  readonly transferList?: readonly Transferable[]
}

export type TaskRunner<Run extends WorkerFunction> = (input: Parameters<Run>[0], options?: RunOptions) => Promise<Awaited<ReturnType<Run>>>

export interface ComputePoolOptions {
  readonly threads: number
  /** Tasks that may wait for a free thread. */
  readonly queue: number
  /** V8 heap (old generation) of each worker, in MiB. */
  readonly memoryMb: number
  readonly log: Logger
  /** How long close() lets running tasks finish before it stops their workers. */
  readonly closeTimeoutMs?: number
  /** Told of each task that ran (or failed) once it settled: its kind and seconds from submission (metrics). */
  readonly onTaskDone?: (name: string, seconds: number, outcome: 'ok' | 'failed') => void
}

/** Tasks on threads and tasks waiting for one, now. */
export interface ComputeLoad {
  running: number
  waiting: number
}

export interface ComputePool {
  /** A typed runner for one task kind; `Run` is the type of the worker module's default export. */
  task<Run extends WorkerFunction> (spec: ComputeTaskSpec): TaskRunner<Run>
  load (): ComputeLoad
  /** Queued tasks are refused, running ones get up to closeTimeoutMs, then every worker is stopped. */
  close (): Promise<void>
}

/** The task ran past its time limit; its worker was stopped. */
export class ComputeTimeoutError extends Error {
  constructor (readonly task: string, readonly timeoutMs: number) {
    super(`${task} took longer than ${timeoutMs / 1000} s and was stopped`)
    this.name = 'ComputeTimeoutError'
  }
}

/** The task threw, or its worker died under it (memory cap, crash). `cause` holds what happened. */
export class ComputeFailedError extends Error {
  constructor (readonly task: string, cause: unknown) {
    super(`${task} failed in its worker: ${cause instanceof Error ? cause.message : String(cause)}`, { cause })
    this.name = 'ComputeFailedError'
  }
}

/**
 * A worker module in this folder. Under tsx (tests, scripts run from src/) this file is TypeScript,
 * and so is the worker, which loads because workers inherit the process's `--import=tsx`; built into
 * dist/, both are JavaScript.
 */
export function workerModule (name: string): string {
  const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js'
  return fileURLToPath(new URL(`./${name}${extension}`, import.meta.url))
}

function shuttingDown (): AppError {
  return new AppError('unavailable', 'The service is shutting down; try again shortly.', [], 1)
}

export function createComputePool (options: ComputePoolOptions): ComputePool {
  const { threads, queue, log } = options
  // Started by the first task, so a service (or a test) that never runs one starts no thread.
  let instance: Piscina | undefined
  function piscina (): Piscina {
    if (instance !== undefined) return instance
    instance = new Piscina({
      // A fixed set of threads: piscina replaces a lost worker only up to minThreads, so with
      // fewer a crash could leave queued tasks without a thread until the next submission.
      minThreads: threads,
      maxThreads: threads,
      resourceLimits: { maxOldGenerationSizeMb: options.memoryMb },
      // Workers yield the CPU to the event loop (and to a database on the same machine) whenever
      // both want it: heavy work may wait, answers to requests should not (Linux: per-thread nice).
      niceIncrement: 10,
      closeTimeout: options.closeTimeoutMs ?? 3000
    })
    // Without a listener an error event would throw: piscina emits one when an idle worker fails
    // or close() times out; tasks in flight get their own error.
    instance.on('error', (error: unknown) => { log.error({ err: error }, 'compute pool: worker error') })
    return instance
  }

  // Running plus waiting tasks, counted here rather than read from piscina, whose queue also
  // admits extra tasks while workers start: this count is the bound the docs promise.
  let inFlight = 0
  let closing = false

  /** Seconds until the queue has likely drained: the tasks ahead of a retry at their median run
   *  time (the median, as a worker's first task also pays for loading its module). */
  function retryAfterSeconds (): number {
    const medianMs = piscina().histogram.runTime.p50
    const estimate = Number.isFinite(medianMs) ? Math.ceil(medianMs * inFlight / threads / 1000) : 1
    return Math.min(60, Math.max(1, estimate))
  }

  function task<Run extends WorkerFunction> (spec: ComputeTaskSpec): TaskRunner<Run> {
    return async (input, runOptions = {}): Promise<Awaited<ReturnType<Run>>> => {
      if (closing) throw shuttingDown()
      if (inFlight >= threads + queue) {
        throw new AppError('unavailable', `The ${spec.name} cannot start now: the compute queue is full (${threads} running, ${queue} waiting); try again shortly.`, [], retryAfterSeconds())
      }
      const timeout = AbortSignal.timeout(spec.timeoutMs)
      const signal = runOptions.signal === undefined ? timeout : AbortSignal.any([timeout, runOptions.signal])
      inFlight++
      const startedAt = performance.now()
      let outcome: 'ok' | 'failed' = 'failed'
      try {
        const transferList = runOptions.transferList as NonNullable<Parameters<Piscina['run']>[1]>['transferList']
        const result: Awaited<ReturnType<Run>> = await piscina().run(input, { filename: spec.filename, signal, ...(transferList === undefined ? {} : { transferList }) })
        outcome = 'ok'
        return result
      } catch (error) {
        if (runOptions.signal?.aborted === true) throw runOptions.signal.reason
        if (timeout.aborted) throw new ComputeTimeoutError(spec.name, spec.timeoutMs)
        if (closing) throw shuttingDown()
        throw new ComputeFailedError(spec.name, error)
      } finally {
        inFlight--
        options.onTaskDone?.(spec.name, (performance.now() - startedAt) / 1000, outcome)
      }
    }
  }

  return {
    task,
    load: () => ({ running: Math.min(inFlight, threads), waiting: Math.max(0, inFlight - threads) }),
    async close () {
      closing = true
      await instance?.close({ force: true })
    }
  }
}
