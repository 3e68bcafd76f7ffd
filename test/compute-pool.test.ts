// The worker pool on its own (src/compute/pool.ts): tasks run on worker threads; a task that throws,
// exhausts its heap, exits or runs past its time limit fails alone with a clear error and the pool
// keeps serving; a caller's signal aborts; the queue is bounded (refusal: `unavailable` with a
// retry time); close() lets running tasks finish and refuses the rest. Also the COMPUTE_* settings.
import t from 'tap'
import { fileURLToPath } from 'node:url'
import { availableParallelism, getPriority } from 'node:os'
import { ComputeFailedError, ComputeTimeoutError, createComputePool, type ComputePoolOptions } from '../src/compute/pool.js'
import { ConfigError, loadConfig } from '../src/config.js'
import { AppError } from '../src/core/errors.js'
import { testEnv } from './helpers/app.js'
import type probe from './helpers/compute-probe.worker.js'

const filename = fileURLToPath(new URL('./helpers/compute-probe.worker.ts', import.meta.url))
const logged: string[] = []
const log = { info: () => {}, warn: () => {}, error: (_details: Record<string, unknown>, message: string) => { logged.push(message) } }

function poolOf (options: Partial<ComputePoolOptions> = {}, timeoutMs = 10_000) {
  const pool = createComputePool({ threads: 1, queue: 4, memoryMb: 64, log, ...options })
  t.teardown(pool.close)
  return { pool, run: pool.task<typeof probe>({ name: 'probe', filename, timeoutMs }) }
}

async function failure (promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected the task to fail')
}

t.test('a task runs on a worker thread, at a lower priority than the event loop, and answers', async (t) => {
  const { run } = poolOf()
  const mainPriority = getPriority()
  const answer = await run({ kind: 'echo', value: 'hello' })
  t.equal(answer.value, 'hello')
  t.not(answer.threadId, 0, 'not the main thread')
  t.equal(getPriority(), mainPriority, 'the main thread keeps its priority')
  // Linux sets a nice value per thread; elsewhere piscina may leave the worker as it is.
  if (process.platform === 'linux') t.equal(answer.priority, Math.min(19, mainPriority + 10), 'the worker is niced by 10')
})

t.test('a task that throws, exhausts its heap or exits fails alone with a clear error; the pool serves on', async (t) => {
  const { run } = poolOf()
  const thrown = await failure(run({ kind: 'throw', message: 'bad input' }))
  t.type(thrown, ComputeFailedError)
  t.equal((thrown as Error).message, 'probe failed in its worker: bad input')

  const started = Date.now()
  const oom = await failure(run({ kind: 'oom' }))
  t.type(oom, ComputeFailedError)
  t.match((oom as Error).message, /memory/i, `names the cause: ${(oom as Error).message}`)
  t.ok(Date.now() - started < 10_000, 'the memory cap stops it long before the time limit')

  const exited = await failure(run({ kind: 'exit' }))
  t.type(exited, ComputeFailedError)
  t.match((exited as Error).message, /exited with code: 3/)

  t.equal((await run({ kind: 'echo', value: 'still here' })).value, 'still here', 'a new worker took over')
})

t.test('a task past its time limit is stopped; a queued task then runs on a new worker', async (t) => {
  const { pool, run } = poolOf()
  const runBriefly = pool.task<typeof probe>({ name: 'brief probe', filename, timeoutMs: 500 })
  const started = Date.now()
  const spun = failure(runBriefly({ kind: 'spin' }))
  const next = run({ kind: 'echo', value: 'after' })
  const error = await spun
  t.type(error, ComputeTimeoutError)
  t.equal((error as Error).message, 'brief probe took longer than 0.5 s and was stopped')
  t.ok(Date.now() - started < 5000, 'stopped at about its limit')
  t.equal((await next).value, 'after')
})

t.test('the time limit counts from submission: a task stuck behind a long one is refused in time', async (t) => {
  const { pool, run } = poolOf()
  const runBriefly = pool.task<typeof probe>({ name: 'brief probe', filename, timeoutMs: 300 })
  const long = run({ kind: 'busy', ms: 1000 })
  t.type(await failure(runBriefly({ kind: 'echo', value: 'too late' })), ComputeTimeoutError)
  t.not((await long).threadId, 0, 'the long task was left alone')
})

t.test("a caller's signal aborts a queued or running task with the signal's reason", async (t) => {
  const { run } = poolOf()
  const controller = new AbortController()
  const running = run({ kind: 'spin' }, { signal: controller.signal })
  const queued = run({ kind: 'echo', value: 'never' }, { signal: controller.signal })
  setTimeout(() => { controller.abort(new Error('client went away')) }, 100)
  t.equal((await failure(running) as Error).message, 'client went away')
  t.equal((await failure(queued) as Error).message, 'client went away')
  t.equal((await run({ kind: 'echo', value: 'ok' })).value, 'ok')
})

t.test('a full queue refuses at once with `unavailable` and a retry time; the accepted tasks all run', async (t) => {
  const { run } = poolOf({ threads: 1, queue: 2 })
  await run({ kind: 'busy', ms: 200 }) // one run time on record for the retry estimate
  const accepted = [run({ kind: 'busy', ms: 200 }), run({ kind: 'busy', ms: 200 }), run({ kind: 'busy', ms: 200 })]
  const refused = await failure(run({ kind: 'echo', value: 'no room' }))
  t.type(refused, AppError)
  t.equal((refused as AppError).kind, 'unavailable')
  t.equal((refused as AppError).message, 'The probe cannot start now: the compute queue is full (1 running, 2 waiting); try again shortly.')
  t.ok(((refused as AppError).retryAfter ?? 0) >= 1, `retry after ${(refused as AppError).retryAfter ?? '-'} s`)
  t.equal((await Promise.allSettled(accepted)).filter((r) => r.status === 'fulfilled').length, 3)
  t.equal((await run({ kind: 'echo', value: 'room again' })).value, 'room again', 'a drained queue accepts again')
})

t.test('close(): the running task finishes, queued and later ones are refused as `unavailable`', async (t) => {
  const pool = createComputePool({ threads: 1, queue: 4, memoryMb: 64, log })
  const run = pool.task<typeof probe>({ name: 'probe', filename, timeoutMs: 10_000 })
  await run({ kind: 'echo', value: 'warm' })
  const running = run({ kind: 'busy', ms: 300 })
  const queued = failure(run({ kind: 'echo', value: 'queued' }))
  await new Promise((resolve) => setTimeout(resolve, 50))
  const started = Date.now()
  await pool.close()
  t.ok(Date.now() - started < 3000, 'closed within its grace time')
  t.not((await running).threadId, 0, 'the running task finished')
  t.match(await queued, { kind: 'unavailable' })
  t.match(await failure(run({ kind: 'echo', value: 'late' })), { kind: 'unavailable', message: /shutting down/ })
})

t.test('close() stops a task that outlives the grace time', async (t) => {
  const pool = createComputePool({ threads: 1, queue: 4, memoryMb: 64, log, closeTimeoutMs: 200 })
  const run = pool.task<typeof probe>({ name: 'probe', filename, timeoutMs: 60_000 })
  const spinning = failure(run({ kind: 'spin' }))
  await new Promise((resolve) => setTimeout(resolve, 300))
  const started = Date.now()
  await pool.close()
  t.ok(Date.now() - started < 2000, 'closed soon after the grace time')
  t.match(await spinning, { kind: 'unavailable' })
})

t.test('COMPUTE_THREADS and COMPUTE_QUEUE: defaults and validation', async (t) => {
  const defaults = loadConfig(testEnv({}, { migrated: false }))
  t.equal(defaults.computeThreads, Math.max(1, availableParallelism() - 1), 'all cores but one, at least one')
  t.equal(defaults.computeQueue, 4 * defaults.computeThreads)
  const set = loadConfig(testEnv({ COMPUTE_THREADS: '3', COMPUTE_QUEUE: '5' }, { migrated: false }))
  t.same([set.computeThreads, set.computeQueue], [3, 5])
  t.equal(loadConfig(testEnv({ COMPUTE_THREADS: '2' }, { migrated: false })).computeQueue, 8, 'the queue follows the threads')
  for (const [name, value] of [['COMPUTE_THREADS', '0'], ['COMPUTE_THREADS', 'two'], ['COMPUTE_QUEUE', '0'], ['COMPUTE_QUEUE', '-1']] as const) {
    t.throws(() => loadConfig(testEnv({ [name]: value }, { migrated: false })), new ConfigError(name, ''), `${name}=${value} is refused`)
    try {
      loadConfig(testEnv({ [name]: value }, { migrated: false }))
    } catch (error) {
      t.equal((error as ConfigError).variable, name, 'the error names the variable')
    }
  }
})
