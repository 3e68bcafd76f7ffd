// Records what the app publishes on its event bus. Delivery may be asynchronous (the bus can go
// through the database), so tests wait for an event rather than expecting it synchronously, and
// prove an absence by waiting for a later marker event: the bus delivers in publication order.
import type { AnyEvent } from '../../src/core/events.js'
import type { TestApp } from './app.js'
import { waitForItem } from './waiting.js'

export interface EventRecorder {
  readonly events: readonly AnyEvent[]
  /** The first event recorded at index `from` or later matching `match`; rejects after `timeoutMs`. */
  waitFor (match: (event: AnyEvent) => boolean, from?: number, timeoutMs?: number): Promise<AnyEvent>
  /** Index to pass as `from`: only events recorded after now. */
  mark (): number
  matching (match: (event: AnyEvent) => boolean, from?: number): AnyEvent[]
  stop (): void
}

export function recordEvents (t: TestApp): EventRecorder {
  const events: AnyEvent[] = []
  const waiters = new Set<() => void>()
  const stop = t.app.live.bus.subscribe((event) => {
    events.push(event)
    for (const wake of waiters) wake()
  })
  return {
    events,
    mark: () => events.length,
    matching: (match, from = 0) => events.slice(from).filter(match),
    async waitFor (match, from = 0, timeoutMs = 5000) {
      return await waitForItem(events, waiters, match, from, timeoutMs, () => 'an event')
    },
    stop
  }
}
