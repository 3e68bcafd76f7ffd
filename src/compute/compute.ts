// The core's `Compute` (CPU-heavy work, src/core/deps.ts), served by the worker pool (pool.ts); the
// core never sees the pool. Adding a task kind (CV parsing, classification): a worker module
// `<kind>.worker.ts` here whose default export takes one input and returns (or resolves) the result,
// calling the core's pure function; a runner `pool.task<typeof fn>({ name, filename:
// workerModule('<kind>.worker'), timeoutMs })` below; and a method on `Compute` that maps the
// pool's errors (ComputeTimeoutError, ComputeFailedError) to what that operation promises.
import { MessageChannel } from 'node:worker_threads'
import type { Config } from '../config.js'
import type { Compute } from '../core/deps.js'
import type { Logger } from '../infra/logger.js'
import { AppError } from '../core/errors.js'
import type cvTask from './cv.worker.js'
import type layoutTask from './layout.worker.js'
import { ComputeFailedError, ComputeTimeoutError, createComputePool, workerModule, type ComputePool, type ComputePoolOptions } from './pool.js'

/** Heap cap of each worker: far above what a layout of a full room (canvas/tile-limit.ts) needs, far
 *  below what would crowd the process. */
const WORKER_MEMORY_MB = 256

/** Generous: a layout of a full room is meant to take at most 2 s (bench/layout.ts); this only stops
 *  one that went wrong, or waited behind a queue that cannot drain. */
const LAYOUT_TIMEOUT_MS = 30_000

/** A CV of at most 5 MiB is read in well under a second (bench/cv.ts); past this the file is taken to
 *  be built to keep a worker busy. Counted from submission, like every task's limit. */
export const CV_TIMEOUT_MS = 10_000

/** A worker stopped for exceeding its heap cap (resourceLimits). */
function outOfMemory (error: ComputeFailedError): boolean {
  return (error.cause as { code?: unknown } | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY'
}

export function createCompute (config: Pick<Config, 'computeThreads' | 'computeQueue'>, log: Logger, onTaskDone?: ComputePoolOptions['onTaskDone']): { compute: Compute, load: ComputePool['load'], close: () => Promise<void> } {
  const pool = createComputePool({ threads: config.computeThreads, queue: config.computeQueue, memoryMb: WORKER_MEMORY_MB, log, ...(onTaskDone === undefined ? {} : { onTaskDone }) })
  const runLayout = pool.task<typeof layoutTask>({ name: 'layout', filename: workerModule('layout.worker'), timeoutMs: LAYOUT_TIMEOUT_MS })
  const runCv = pool.task<typeof cvTask>({ name: 'CV parse', filename: workerModule('cv.worker'), timeoutMs: CV_TIMEOUT_MS })

  return {
    load: () => pool.load(),
    compute: {
      async layout (algorithm, tileIds) {
        try {
          return await runLayout({ algorithm, tileIds })
        } catch (error) {
          // A layout past its limit says the machine is overloaded, not that the room is bad.
          if (error instanceof ComputeTimeoutError) throw new AppError('unavailable', `The layout took longer than ${error.timeoutMs / 1000} s and was stopped; try again later.`, [], 5)
          throw error
        }
      },
      async parseCv (bytes) {
        // The worker says when the parse itself begins: a parse that ran out of time refuses the
        // file, one that never got a thread (a saturated machine, a worker loading its parsers)
        // says the service is busy.
        const { port1: began, port2: started } = new MessageChannel()
        let running = false
        began.once('message', () => { running = true })
        began.unref()
        try {
          return await runCv({ bytes, started }, { transferList: [started] })
        } catch (error) {
          if (error instanceof ComputeTimeoutError) {
            if (!running) throw new AppError('unavailable', `The CV could not be read within ${CV_TIMEOUT_MS / 1000} s: the service is busy; try again shortly.`, [], 5)
            return { ok: false, refusal: 'too-complex', reason: `could not be read within ${CV_TIMEOUT_MS / 1000} s` }
          }
          if (error instanceof ComputeFailedError && outOfMemory(error)) return { ok: false, refusal: 'too-complex', reason: `needs more than the ${WORKER_MEMORY_MB} MiB a CV may take to read` }
          throw error
        } finally {
          began.close()
        }
      }
    },
    close: pool.close
  }
}
