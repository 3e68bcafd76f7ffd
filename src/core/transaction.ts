// A change and the events that describe it commit together or not at all (a transactional outbox):
// an operation does its writes and publishes its events inside one `inTransaction`. The events are
// written to the log as the transaction's last statement, so a crash or a failed write can never
// leave a committed change that live clients and replays never hear of, nor an event for a change
// that rolled back. After the commit, delivery is woken on every instance.
import type { Db } from '../db/database.js'
import type { CoreDeps } from './deps.js'
import { insertEvents, type NewEvent } from './event-log.repository.js'
import type { Publish } from './events.js'

export interface Transaction {
  readonly trx: Db
  readonly publish: Publish
}

export async function inTransaction<T> (deps: Pick<CoreDeps, 'db' | 'events'>, work: (tx: Transaction) => Promise<T>): Promise<T> {
  const { value, published } = await deps.db.transaction().execute(async (trx) => {
    const events: NewEvent[] = []
    const publish: Publish = (type, payload, { audience, userId }) => {
      events.push({ type, payload, audience, userId: userId ?? null })
    }
    const value = await work({ trx, publish })
    await insertEvents(trx, events)
    return { value, published: events.length > 0 }
  })
  if (published) deps.events.committed()
  return value
}
