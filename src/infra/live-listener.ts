// Picks the LISTEN side for the configured database: in-process on PGlite, a dedicated connection on Postgres.
import { sql } from 'kysely'
import type { Config } from '../config.js'
import type { Logger } from '../core/deps.js'
import type { DatabaseHandle } from '../db/database.js'
import { pgliteListener, postgresListener, type NotificationListener } from './notification-listener.js'

export function liveListenerFor (database: DatabaseHandle, config: Config, log: Logger): NotificationListener {
  if (database.pglite !== undefined) {
    return pgliteListener(database.pglite, async (statement) => { await sql.raw(statement).execute(database.db) })
  }
  if (config.databaseUrl === undefined) throw new Error('a Postgres database needs DATABASE_URL for its notification connection')
  return postgresListener(config.databaseUrl, log)
}
