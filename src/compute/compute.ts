// The core's `Compute` (CPU-heavy work, src/core/deps.ts), served by the worker pool (pool.ts) and,
// for CV files, by child processes under a memory limit (child-pool.ts); the core never sees either.
// Adding a task kind: a worker module `<kind>.worker.ts` here whose default export takes one input
// and returns (or resolves) the result, calling the core's pure function; a runner `pool.task<typeof
// fn>({ name, filename: workerModule('<kind>.worker'), timeoutMs })` below; and a method on `Compute`
// that maps the pool's errors (ComputeTimeoutError, ComputeFailedError) to what that operation
// promises. A task whose input is untrusted and whose memory a crafted input could inflate (a
// document to decode) runs in a child process instead, like `cv.process.ts`.
import type { Config } from '../config.js'
import type { Compute } from '../core/deps.js'
import type { CvParseResult } from '../core/passport/cv.types.js'
import type { Logger } from '../infra/logger.js'
import { AppError } from '../core/errors.js'
import { childModule, createChildPool } from './child-pool.js'
import type classifyTask from './classify.worker.js'
import type layoutTask from './layout.worker.js'
import { ComputeTimeoutError, createComputePool, workerModule, type ComputePool, type ComputePoolOptions } from './pool.js'

/** Heap cap of each worker: far above what a layout of a full room (canvas/tile-limit.ts) needs, far
 *  below what would crowd the process. */
const WORKER_MEMORY_MB = 256

/** Generous: a layout of a full room is meant to take at most 2 s (bench/layout.ts); this only stops
 *  one that went wrong, or waited behind a queue that cannot drain. */
const LAYOUT_TIMEOUT_MS = 30_000

/** A classification of the longest text (10,000 characters) takes tens of milliseconds; this only
 *  stops one that waited behind a queue that cannot drain. */
const CLASSIFY_TIMEOUT_MS = 10_000

/** A CV of at most 5 MiB is read in well under a second (bench/cv.ts); past this the file is taken to
 *  be built to keep a parser busy. The same bound holds on the wait for a free parser. */
export const CV_TIMEOUT_MS = 10_000

export function createCompute (config: Pick<Config, 'computeThreads' | 'computeQueue' | 'cvParseMemoryMb'>, log: Logger, onTaskDone?: ComputePoolOptions['onTaskDone']): { compute: Compute, load: ComputePool['load'], close: () => Promise<void> } {
  const pool = createComputePool({ threads: config.computeThreads, queue: config.computeQueue, memoryMb: WORKER_MEMORY_MB, log, ...(onTaskDone === undefined ? {} : { onTaskDone }) })
  const runLayout = pool.task<typeof layoutTask>({ name: 'layout', filename: workerModule('layout.worker'), timeoutMs: LAYOUT_TIMEOUT_MS })
  const runClassify = pool.task<typeof classifyTask>({ name: 'classification', filename: workerModule('classify.worker'), timeoutMs: CLASSIFY_TIMEOUT_MS })
  const cvParsers = createChildPool<Uint8Array, CvParseResult>({
    name: 'CV parse',
    entry: childModule('cv.process'),
    processes: config.computeThreads,
    queue: config.computeQueue,
    memoryMb: config.cvParseMemoryMb,
    runTimeoutMs: CV_TIMEOUT_MS,
    waitTimeoutMs: CV_TIMEOUT_MS,
    log,
    ...(onTaskDone === undefined ? {} : { onTaskDone })
  })

  /** Either pool past its time limit says the machine is overloaded, not that the input is bad. */
  function overloaded (what: string, error: unknown): unknown {
    if (error instanceof ComputeTimeoutError) return new AppError('unavailable', `The ${what} took longer than ${error.timeoutMs / 1000} s and was stopped; try again later.`, [], 5)
    return error
  }

  return {
    load: () => {
      const [threads, children] = [pool.load(), cvParsers.load()]
      return { running: threads.running + children.running, waiting: threads.waiting + children.waiting }
    },
    compute: {
      async layout (algorithm, tileIds) {
        try {
          return await runLayout({ algorithm, tileIds })
        } catch (error) {
          throw overloaded('layout', error)
        }
      },
      async classify (text) {
        try {
          return await runClassify(text)
        } catch (error) {
          throw overloaded('classification', error)
        }
      },
      async parseCv (bytes) {
        const outcome = await cvParsers.run(bytes)
        if (outcome.kind === 'done') return outcome.output
        if (outcome.kind === 'over-time') return { ok: false, refusal: 'too-complex', reason: `could not be read within ${CV_TIMEOUT_MS / 1000} s` }
        return { ok: false, refusal: 'too-complex', reason: `needs more than the ${config.cvParseMemoryMb} MiB of memory a CV may take to read` }
      }
    },
    close: async () => { await Promise.all([pool.close(), cvParsers.close()]) }
  }
}
