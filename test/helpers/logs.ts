// What the service logs, read by a test: pass `logs.stream` as BuildOptions.logStream (with a
// LOG_LEVEL that lets the lines through) and wait for a line by its message or fields.
import { waitForItem } from './waiting.js'

export interface LogLine { level: number, msg: string, [field: string]: unknown }

export interface LogRecorder {
  readonly stream: { write (line: string): void }
  readonly lines: LogLine[]
  /** The first line at index `from` or later that matches; rejects after `timeoutMs`. */
  waitFor (match: (line: LogLine) => boolean, timeoutMs?: number, from?: number): Promise<LogLine>
  matching (match: (line: LogLine) => boolean, from?: number): LogLine[]
}

/** pino's levels. */
export const WARN = 40
export const ERROR = 50

export function recordLogs (): LogRecorder {
  const lines: LogLine[] = []
  const waiters = new Set<() => void>()
  return {
    lines,
    stream: {
      write (text) {
        for (const line of text.split('\n')) {
          if (line.trim() === '') continue
          lines.push(JSON.parse(line) as LogLine)
        }
        for (const wake of waiters) wake()
      }
    },
    matching: (match, from = 0) => lines.slice(from).filter(match),
    async waitFor (match, timeoutMs = 5_000, from = 0) {
      return await waitForItem(lines, waiters, match, from, timeoutMs, () => `a log line; got ${JSON.stringify(lines.slice(from).map((l) => l.msg))}`)
    }
  }
}
