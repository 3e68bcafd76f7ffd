// The child's side of child-pool.ts: what a child process's entry module calls once its code is
// loaded. It says `ready` (the pool then caps the process's memory, before any input arrives), then
// answers one input at a time over the IPC channel (advanced serialization: bytes cross as bytes).
import { promisify } from 'node:util'
import { deflateSync, inflate } from 'node:zlib'

/** What the pool sends: one input, numbered. */
export interface ChildRequest<Input> {
  id: number
  input: Input
}

/** What a child sends: ready once; then, for each input, its output, or that it ran out of memory,
 *  or (a bug, never the input's fault) that it failed. */
export type ChildMessage<Output> =
  | { ready: true }
  | { id: number, output: Output }
  | { id: number, outOfMemory: true }
  | { id: number, failed: string }

/**
 * An allocation the limit refused (`Array buffer allocation failed`, `Invalid array length`) or a
 * stack the input's nesting overflowed: the input needs more than the child may have. Everything a
 * parser throws that is a RangeError is taken as that.
 */
function outOfMemory (error: unknown): boolean {
  return error instanceof RangeError
}

function send (message: ChildMessage<unknown>): Promise<void> {
  return new Promise((resolve, reject) => {
    process.send?.(message, undefined, {}, (error) => { if (error === null) resolve(); else reject(error) })
  })
}

/** Serves `run` to the pool that started this process. Call once, after the code `run` needs is loaded. */
export async function serveInChild<Input, Output> (run: (input: Input) => Promise<Output>): Promise<void> {
  if (process.send === undefined) throw new Error('this module runs as a child of src/compute/child-pool.ts')
  // libuv starts its thread pool (and their stacks) on first use: use it now, so those threads
  // exist before the pool caps this process's memory and a first DOCX (yauzl inflates on the pool)
  // does not pay for them out of its budget.
  await promisify(inflate)(deflateSync('warm'))
  // One input at a time: the pool never sends another before this one is answered.
  process.on('message', (message: ChildRequest<Input>) => {
    void (async () => {
      try {
        await send({ id: message.id, output: await run(message.input) })
      } catch (error) {
        if (outOfMemory(error)) {
          // What failed to allocate may have left the heap in any state: this process ends, and the
          // pool starts a fresh one.
          await send({ id: message.id, outOfMemory: true }).catch(() => {})
          process.exit(1)
        }
        await send({ id: message.id, failed: error instanceof Error ? `${error.name}: ${error.message}` : String(error) })
      }
    })()
  })
  // The pool ends this process by a signal; a parent that went away closes the channel.
  process.on('disconnect', () => { process.exit(0) })
  await send({ ready: true })
}
