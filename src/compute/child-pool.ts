// Untrusted input parsed in child processes whose WHOLE memory the kernel caps (DECISIONS §17): a
// worker thread's resourceLimits bound only its V8 heap, while a parser's decoded buffers live
// outside it, in the process's memory, which a crafted file can take to gigabytes. Here:
// - each child is a Node process running one entry module (child-task.ts is its side), started on
//   the first task and kept warm; one task at a time each, at most `processes` at once;
// - memory: once the child has loaded its code and before it reads any input, its data segment
//   limit (RLIMIT_DATA: every private writable mapping — V8's heap, ArrayBuffers, malloc) is set,
//   soft and hard, with util-linux's `prlimit`, so that what it already holds plus what it may still
//   map is `memoryMb`. Node cannot start under such a limit: V8 reserves 512 MiB of writable address
//   space for JIT code at start (x64), which is address space, not memory, so the limit counts from
//   what the loaded child has reserved and subtracts what it has used. An allocation past it fails:
//   the child dies, or answers `outOfMemory` and exits; the task is `over-memory`, the child replaced.
//   V8's own heap is held to half the budget, so its collector works well before the kernel refuses;
// - time: a task's own run is stopped after `runTimeoutMs` (the child is killed and replaced); a task
//   that waited `waitTimeoutMs` for a child is refused as busy (503, Retry-After);
// - queue: at most `queue` tasks wait; the next is refused at once (503, Retry-After).
// The service's process only passes bytes over the IPC channel, so it grows by about the input.
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { setPriority } from 'node:os'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { AppError } from '../core/errors.js'
import type { Logger } from '../infra/logger.js'
import type { ChildMessage, ChildRequest } from './child-task.js'

const run = promisify(execFile)

export interface ChildPoolOptions {
  /** Names the task in errors and logs, e.g. "CV parse". */
  readonly name: string
  /** Absolute path of the child's entry module (childModule gives it). */
  readonly entry: string
  readonly processes: number
  /** Tasks that may wait for a child. */
  readonly queue: number
  /** What each child may hold in all, in MiB. */
  readonly memoryMb: number
  /** Longest one task may run in its child. */
  readonly runTimeoutMs: number
  /** Longest a task may wait for a child (including a child's start). */
  readonly waitTimeoutMs: number
  readonly log: Logger
  /** Told of each task that ran once it settled: seconds from submission, and whether it gave an output. */
  readonly onTaskDone?: (name: string, seconds: number, outcome: 'ok' | 'failed') => void
}

/** How a task ended: its output, or the bound it crossed (the child was replaced). */
export type ChildOutcome<Output> =
  | { kind: 'done', output: Output }
  | { kind: 'over-memory' }
  | { kind: 'over-time' }

export interface ChildPool<Input, Output> {
  /** Runs one task; rejects with AppError `unavailable` (Retry-After) when the queue is full, the
   *  task waited too long, children cannot be started, or the pool is closing. */
  run (input: Input): Promise<ChildOutcome<Output>>
  load (): { running: number, waiting: number }
  close (): Promise<void>
}

/**
 * A child entry module in this folder: under tsx (tests, scripts run from src/) a TypeScript file the
 * child loads with tsx too; built into dist/, JavaScript that plain Node runs.
 */
export function childModule (name: string): string {
  const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js'
  return fileURLToPath(new URL(`./${name}${extension}`, import.meta.url))
}

/** A task waiting for a child, or run by one. */
interface Task<Input, Output> {
  input: Input
  submittedAt: number
  settle: (outcome: ChildOutcome<Output>) => void
  fail: (error: unknown) => void
  waitTimer: NodeJS.Timeout
}

interface Slot<Input, Output> {
  child: ChildProcess | undefined
  state: 'empty' | 'starting' | 'idle' | 'busy'
  task?: { id: number, task: Task<Input, Output>, timer: NodeJS.Timeout, startedAt: number }
  /** The end of the child's standard error, for the log when it dies (a V8 fatal error says why). */
  stderr: string
}

/** Below this, a child's budget would leave an input nothing: a configuration error, said once at start. */
const MIN_BUDGET_MB = 32
/** How long a failed start keeps the pool from trying again (each try starts a Node process). */
const START_BACKOFF_MS = 10_000
const READY_TIMEOUT_MS = 30_000

/** Fields of /proc/<pid>/status, in KiB. */
async function processStatus (pid: number): Promise<{ vmData: number, rssAnon: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const field = (name: string): number => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)
    if (match === null) throw new Error(`/proc/${pid}/status has no ${name}`)
    return Number(match[1])
  }
  return { vmData: field('VmData'), rssAnon: field('RssAnon') }
}

/** The soft and hard data limits /proc says the process has, in bytes. */
async function dataLimit (pid: number): Promise<string> {
  const limits = await readFile(`/proc/${pid}/limits`, 'utf8')
  const match = /^Max data size\s+(\S+)\s+(\S+)/m.exec(limits)
  return match === null ? 'unknown' : `${match[1]}:${match[2]}`
}

export function createChildPool<Input, Output> (options: ChildPoolOptions): ChildPool<Input, Output> {
  const { name, processes, queue, memoryMb, log } = options
  const slots: Array<Slot<Input, Output>> = Array.from({ length: processes }, () => ({ child: undefined, state: 'empty', stderr: '' }))
  const waiting: Array<Task<Input, Output>> = []
  let nextId = 1
  let closing = false
  let startBlockedUntil = 0
  let startFailure = ''
  let lastFailureLog = 0
  /** A moving average of tasks' run time, for Retry-After. */
  let averageRunMs = 1000

  const busy = (): number => slots.filter((s) => s.state === 'busy').length

  function retryAfterSeconds (): number {
    const ahead = busy() + waiting.length
    return Math.min(60, Math.max(1, Math.ceil(averageRunMs * ahead / processes / 1000)))
  }

  function done (submittedAt: number, outcome: 'ok' | 'failed'): void {
    options.onTaskDone?.(name, (performance.now() - submittedAt) / 1000, outcome)
  }

  function refuseWaiting (error: AppError): void {
    for (const task of waiting.splice(0)) {
      clearTimeout(task.waitTimer)
      done(task.submittedAt, 'failed')
      task.fail(error)
    }
  }

  function unavailable (): AppError {
    return new AppError('unavailable', `The ${name} is unavailable on this instance (${startFailure}); try again later.`, [], Math.ceil(START_BACKOFF_MS / 1000))
  }

  /** The child could not be started under its limit: said in the log (at most every 10 s) and to
   *  every waiting task; the next start is tried after a pause. */
  function startFailed (slot: Slot<Input, Output>, reason: string): void {
    startFailure = reason
    startBlockedUntil = Date.now() + START_BACKOFF_MS
    if (Date.now() - lastFailureLog >= START_BACKOFF_MS) {
      lastFailureLog = Date.now()
      log.error({ task: name, reason, stderr: slot.stderr.slice(-1000) }, 'compute: a child process could not be started under its memory limit')
    }
    slot.child?.kill('SIGKILL')
    slot.child = undefined
    slot.state = 'empty'
    if (slots.every((s) => s.state === 'empty')) refuseWaiting(unavailable())
  }

  /** Caps a ready child's memory; then it may take tasks. */
  async function limit (slot: Slot<Input, Output>, child: ChildProcess): Promise<void> {
    const pid = child.pid
    if (pid === undefined) throw new Error('the child has no process id')
    const { vmData, rssAnon } = await processStatus(pid)
    const budgetKb = memoryMb * 1024 - rssAnon
    if (budgetKb < MIN_BUDGET_MB * 1024) throw new Error(`the loaded parser already holds ${Math.round(rssAnon / 1024)} MiB of the ${memoryMb} MiB it may have`)
    const bytes = (vmData + budgetKb) * 1024
    await run('prlimit', ['--pid', String(pid), `--data=${bytes}:${bytes}`])
    const set = await dataLimit(pid)
    if (set !== `${bytes}:${bytes}`) throw new Error(`prlimit left the data limit at ${set}`)
  }

  function start (slot: Slot<Input, Output>): void {
    slot.state = 'starting'
    slot.stderr = ''
    const loader = options.entry.endsWith('.ts') ? ['--import', import.meta.resolve('tsx')] : []
    const child = spawn(process.execPath, [`--max-old-space-size=${Math.floor(memoryMb / 2)}`, ...loader, options.entry], {
      // Nothing of the service's environment is the child's business; two libuv threads serve it.
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', UV_THREADPOOL_SIZE: '2' },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'advanced'
    })
    slot.child = child
    child.stderr?.setEncoding('utf8')
    child.stderr?.on('data', (chunk: string) => { slot.stderr = (slot.stderr + chunk).slice(-4000) })
    const readyTimer = setTimeout(() => { if (slot.child === child && slot.state === 'starting') startFailed(slot, `not ready within ${READY_TIMEOUT_MS / 1000} s`) }, READY_TIMEOUT_MS)
    child.on('message', (message: ChildMessage<Output>) => {
      if (slot.child !== child) return
      if ('ready' in message) {
        clearTimeout(readyTimer)
        // Parsing may wait when the event loop and the database want the CPU (Linux: the nice of the
        // thread that parses); the start itself ran at normal priority, not to make a parse wait.
        try {
          if (child.pid !== undefined) setPriority(child.pid, 10)
        } catch {}
        limit(slot, child).then(() => {
          if (slot.child !== child) return
          slot.state = 'idle'
          startFailure = ''
          dispatch()
        }, (error: unknown) => {
          if (slot.child === child) startFailed(slot, `its memory could not be limited: ${error instanceof Error ? error.message : String(error)}`)
        })
        return
      }
      const running = slot.task
      if (running === undefined || running.id !== message.id) return
      if ('output' in message) {
        finish(slot, { kind: 'done', output: message.output })
        slot.state = 'idle'
        dispatch()
      } else if ('outOfMemory' in message) {
        replace(slot, { kind: 'over-memory' })
      } else {
        const { task } = running
        clearTimeout(running.timer)
        slot.task = undefined
        slot.state = 'idle'
        done(task.submittedAt, 'failed')
        task.fail(new Error(`${name} failed in its child: ${message.failed}`))
        dispatch()
      }
    })
    const gone = (reason: string): void => {
      clearTimeout(readyTimer)
      if (slot.child !== child) return
      if (slot.state === 'starting') { startFailed(slot, reason); return }
      if (slot.state === 'busy') {
        log.info({ task: name, reason, stderr: slot.stderr.slice(-500) }, 'compute: a child process died during a task; the task is refused as over its memory limit')
        replace(slot, { kind: 'over-memory' })
        return
      }
      slot.child = undefined
      slot.state = 'empty'
      dispatch()
    }
    child.on('exit', (code, signal) => { gone(signal === null ? `exited with code ${code ?? '?'}` : `killed by ${signal}`) })
    child.on('error', (error) => { gone(error.message) })
  }

  /** Settles the slot's task, if it has one. */
  function finish (slot: Slot<Input, Output>, outcome: ChildOutcome<Output>): void {
    const running = slot.task
    if (running === undefined) return
    clearTimeout(running.timer)
    slot.task = undefined
    averageRunMs = 0.8 * averageRunMs + 0.2 * (performance.now() - running.startedAt)
    done(running.task.submittedAt, outcome.kind === 'done' ? 'ok' : 'failed')
    running.task.settle(outcome)
  }

  /** Ends the slot's task with a bound crossed, kills its child and starts another in its place. */
  function replace (slot: Slot<Input, Output>, outcome: ChildOutcome<Output>): void {
    finish(slot, outcome)
    slot.child?.kill('SIGKILL')
    slot.child = undefined
    slot.state = 'empty'
    if (!closing) start(slot)
  }

  function dispatch (): void {
    if (closing) return
    for (const slot of slots) {
      if (slot.state !== 'idle' || slot.child === undefined) continue
      const task = waiting.shift()
      if (task === undefined) break
      clearTimeout(task.waitTimer)
      const id = nextId++
      const timer = setTimeout(() => { if (slot.task?.id === id) replace(slot, { kind: 'over-time' }) }, options.runTimeoutMs)
      slot.task = { id, task, timer, startedAt: performance.now() }
      slot.state = 'busy'
      const request: ChildRequest<Input> = { id, input: task.input }
      slot.child.send(request, (error) => { if (error !== null && slot.task?.id === id) replace(slot, { kind: 'over-memory' }) })
    }
    if (waiting.length > 0 && Date.now() >= startBlockedUntil) {
      for (const slot of slots) if (slot.state === 'empty') start(slot)
    }
  }

  return {
    run (input) {
      return new Promise((resolve, reject) => {
        if (closing) { reject(new AppError('unavailable', 'The service is shutting down; try again shortly.', [], 1)); return }
        if (busy() + waiting.length >= processes + queue) {
          reject(new AppError('unavailable', `The ${name} cannot start now: ${processes} running and ${queue} waiting, the most this instance takes; try again shortly.`, [], retryAfterSeconds()))
          return
        }
        if (startFailure !== '' && Date.now() < startBlockedUntil && slots.every((s) => s.state === 'empty')) { reject(unavailable()); return }
        const task: Task<Input, Output> = {
          input,
          submittedAt: performance.now(),
          settle: resolve,
          fail: reject,
          waitTimer: setTimeout(() => {
            const at = waiting.indexOf(task)
            if (at === -1) return
            waiting.splice(at, 1)
            done(task.submittedAt, 'failed')
            reject(new AppError('unavailable', `The ${name} could not start within ${options.waitTimeoutMs / 1000} s: the service is busy; try again shortly.`, [], retryAfterSeconds()))
          }, options.waitTimeoutMs)
        }
        waiting.push(task)
        dispatch()
      })
    },
    load: () => ({ running: busy(), waiting: waiting.length }),
    async close () {
      closing = true
      refuseWaiting(new AppError('unavailable', 'The service is shutting down; try again shortly.', [], 1))
      const exits: Array<Promise<unknown>> = []
      for (const slot of slots) {
        const child = slot.child
        if (slot.task !== undefined) {
          const { task, timer } = slot.task
          clearTimeout(timer)
          slot.task = undefined
          task.fail(new AppError('unavailable', 'The service is shutting down; try again shortly.', [], 1))
        }
        slot.child = undefined
        slot.state = 'empty'
        if (child !== undefined && child.exitCode === null && child.signalCode === null) {
          exits.push(new Promise((resolve) => { child.once('exit', resolve) }))
          child.kill('SIGKILL')
        }
      }
      await Promise.all(exits)
    }
  }
}
