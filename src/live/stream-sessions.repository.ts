// The one query the stream hub makes about sessions: which of its streams' sessions still stand.
import type { Db } from '../db/database.js'

const CHUNK = 1_000

/** The ids among `sessionIds` whose session exists, is not revoked and has not expired at `now`. */
export async function standingSessionIds (db: Db, sessionIds: readonly string[], now: Date): Promise<Set<string>> {
  const standing = new Set<string>()
  for (let i = 0; i < sessionIds.length; i += CHUNK) {
    const rows = await db.selectFrom('sessions')
      .select('id')
      .where('id', 'in', sessionIds.slice(i, i + CHUNK))
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', now)
      .execute()
    for (const row of rows) standing.add(row.id)
  }
  return standing
}
