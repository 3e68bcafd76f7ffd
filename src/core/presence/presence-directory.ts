// What `presence:joined` shows of the user who joined: their display name and avatar, or nothing for
// a user who may not be shown (presence.repository.ts). Asked once per join on every instance, so
// the joins of one turn of the event loop (a crowd arriving, or a restarted instance learning who is
// present) are read together, at most MAX_BATCH ids per statement.
import type { Db } from '../../db/database.js'
import { toUserSummary, type UserSummary } from '../users/users.types.js'
import { shownUsers } from './presence.repository.js'

const MAX_BATCH = 500

export interface PresenceDirectory {
  /** The user as others are shown them, or undefined when they may not be shown (or do not exist). */
  describe (userId: string): Promise<UserSummary | undefined>
}

export function createPresenceDirectory (db: Db): PresenceDirectory {
  let waiting = new Map<string, Array<{ resolve: (user: UserSummary | undefined) => void, reject: (error: unknown) => void }>>()
  let scheduled = false

  async function read (ids: string[], waiters: typeof waiting): Promise<void> {
    try {
      const rows = await shownUsers(db, ids)
      const found = new Map(rows.map((row) => [row.id, toUserSummary(row)]))
      for (const id of ids) for (const waiter of waiters.get(id) ?? []) waiter.resolve(found.get(id))
    } catch (error) {
      for (const id of ids) for (const waiter of waiters.get(id) ?? []) waiter.reject(error)
    }
  }

  function flush (): void {
    scheduled = false
    const waiters = waiting
    waiting = new Map()
    const ids = [...waiters.keys()]
    for (let i = 0; i < ids.length; i += MAX_BATCH) void read(ids.slice(i, i + MAX_BATCH), waiters)
  }

  return {
    async describe (userId) {
      return await new Promise((resolve, reject) => {
        const list = waiting.get(userId)
        if (list === undefined) waiting.set(userId, [{ resolve, reject }])
        else list.push({ resolve, reject })
        if (!scheduled) {
          scheduled = true
          setImmediate(flush)
        }
      })
    }
  }
}
