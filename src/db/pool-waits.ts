// How long requests have been waiting for a connection of the request pool, as /health reports it
// (DECISIONS §17 "/health measures the database, not the pool"): every acquisition is timed from its
// request to its connection (outage-dialect.ts), and the oldest one still waiting says how saturated
// the pool is, whatever Postgres itself answers.
export interface PoolWait {
  /** Acquisitions waiting now. */
  waiting: number
  /** How long the oldest of them has waited, in ms (0 when none waits). */
  longestMs: number
}

export class PoolWaits {
  /** Each waiting acquisition and when it began, oldest first (a Map keeps insertion order). */
  private readonly since = new Map<object, number>()
  private readonly now: () => number

  constructor (now: () => number = () => performance.now()) {
    this.now = now
  }

  async time<T> (acquire: () => Promise<T>): Promise<T> {
    const token = {}
    this.since.set(token, this.now())
    try {
      return await acquire()
    } finally {
      this.since.delete(token)
    }
  }

  current (): PoolWait {
    const oldest = this.since.values().next()
    return { waiting: this.since.size, longestMs: oldest.done === true ? 0 : Math.round(this.now() - oldest.value) }
  }
}
