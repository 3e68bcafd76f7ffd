// A worker module for the pool's own tests (test/compute-pool.test.ts): each input asks the worker
// to behave one way — answer, throw, spin, exhaust its heap, or exit.
import { getPriority } from 'node:os'
import { threadId } from 'node:worker_threads'

export type ProbeInput =
  | { kind: 'echo', value: string }
  | { kind: 'busy', ms: number }
  | { kind: 'throw', message: string }
  | { kind: 'spin' }
  | { kind: 'oom' }
  | { kind: 'exit' }

export default function probe (input: ProbeInput): { threadId: number, priority?: number, value?: string } {
  switch (input.kind) {
    case 'echo':
      return { threadId, priority: getPriority(), value: input.value }
    case 'busy': {
      const until = Date.now() + input.ms
      while (Date.now() < until) { /* CPU-bound, like a real task */ }
      return { threadId }
    }
    case 'throw':
      throw new Error(input.message)
    case 'spin':
      for (;;) { /* never returns: only the time limit stops it */ }
    case 'oom': {
      const hoard: number[][] = []
      for (;;) hoard.push(new Array<number>(1_000_000).fill(hoard.length))
    }
    case 'exit':
      process.exit(3)
  }
}
