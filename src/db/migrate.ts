import { Migrator, type Kysely } from 'kysely'
import { migrations } from '../../migrations/index.js'

/** Applies every pending migration; Kysely's lock table makes concurrent callers safe. */
export async function migrateToLatest<DB> (db: Kysely<DB>): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations }
  })
  const { error, results } = await migrator.migrateToLatest()
  const failed = results?.find((r) => r.status === 'Error')
  if (error !== undefined || failed !== undefined) {
    const cause = error instanceof Error ? error : new Error(String(error))
    throw new Error(`migration ${failed?.migrationName ?? ''} failed: ${cause.message}`, { cause })
  }
}
