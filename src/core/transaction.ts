// A change and the events that describe it commit together or not at all (a transactional outbox):
// an operation does its writes and publishes its events inside one `inTransaction`. The events are
// written to the log at the transaction's end, so a crash or a failed write can never
// leave a committed change that live clients and replays never hear of, nor an event for a change
// that rolled back. After the commit, delivery is woken on every instance.
import type { Db } from '../db/database.js'
import type { CoreDeps } from './deps.js'
import { insertEvents, type NewEvent } from './event-log.repository.js'
import { outcomeKeeper } from './idempotency/keyed-call.js'
import type { Publish } from './events.js'

export interface Transaction {
  readonly trx: Db
  readonly publish: Publish
  /** Writes the events published so far now rather than at the end: for an operation whose last
   *  statement must be the one that takes a hot row's lock (tile-move.ts). */
  readonly writeEvents: () => Promise<void>
  /** Says that the operation wrote an event by a statement of its own (`insertEventWithVersionOf`):
   *  delivery is woken after the commit, as for a published one. */
  readonly wroteEvent: () => void
  /** Work that must follow the commit, never precede it (signals that end a suspended user's
   *  streams on every instance): run by `inTransaction` once the transaction committed, in order,
   *  and dropped if it rolls back. A failure there is the work's own to log; it cannot undo the commit. */
  readonly afterCommit: (work: () => Promise<void>) => void
}

export async function inTransaction<T> (deps: Pick<CoreDeps, 'db' | 'events'>, work: (tx: Transaction) => Promise<T>): Promise<T> {
  const followUps: Array<() => Promise<void>> = []
  // A create run with an Idempotency-Key keeps its outcome as this transaction's last statement
  // (src/core/idempotency/keyed-call.ts): one statement more, no commit more.
  const keepOutcome = outcomeKeeper()
  const { value, published } = await deps.db.transaction().execute(async (trx) => {
    followUps.length = 0
    let events: NewEvent[] = []
    let published = false
    const publish: Publish = (type, payload, { audience, userId }) => {
      events.push({ type, payload, audience, userId: userId ?? null })
      published = true
    }
    const writeEvents = async (): Promise<void> => {
      const written = events
      events = []
      await insertEvents(trx, written)
    }
    const afterCommit = (followUp: () => Promise<void>): void => { followUps.push(followUp) }
    const value = await work({ trx, publish, writeEvents, wroteEvent: () => { published = true }, afterCommit })
    await writeEvents()
    if (keepOutcome !== undefined) await keepOutcome(trx, value)
    return { value, published }
  })
  if (published) deps.events.committed()
  for (const followUp of followUps) await followUp()
  return value
}
