import { Migrator, sql, type Kysely } from 'kysely'
import { migrations } from '../../migrations/index.js'

function migratorOf<DB> (db: Kysely<DB>): Migrator {
  return new Migrator({ db, provider: { getMigrations: async () => migrations } })
}

/** Applies every pending migration; Kysely's lock table makes concurrent callers safe. */
export async function migrateToLatest<DB> (db: Kysely<DB>): Promise<void> {
  const { error, results } = await migratorOf(db).migrateToLatest()
  const failed = results?.find((r) => r.status === 'Error')
  if (error !== undefined || failed !== undefined) {
    const cause = error instanceof Error ? error : new Error(String(error))
    throw new Error(`migration ${failed?.migrationName ?? ''} failed: ${cause.message}`, { cause })
  }
}

/**
 * Whether the connected role may migrate: it owns (or is a member of the owner of) the migration
 * table, or, on a database never migrated, may create in the schema. A service running as a role
 * without ownership (docs/operations.md, *Two database roles*) may not: it can neither alter tables
 * nor take Kysely's migration lock.
 */
async function mayMigrate<DB> (db: Kysely<DB>): Promise<boolean> {
  const { rows } = await sql<{ may: boolean }>`
    select case when to_regclass('kysely_migration') is null
      then has_schema_privilege(current_schema(), 'CREATE')
      else pg_has_role((select relowner from pg_class where oid = to_regclass('kysely_migration')), 'USAGE')
    end as may`.execute(db)
  return rows[0]?.may === true
}

/**
 * At start on Postgres: the owner of the tables applies pending migrations as before; a role that
 * does not own them never tries (it would fail half-way, or take locks it may not), and only checks
 * that none is pending — else the service stops, saying to run `npm run migrate` as the owner.
 */
export async function migrateOrVerify<DB> (db: Kysely<DB>): Promise<void> {
  if (await mayMigrate(db)) {
    await migrateToLatest(db)
    return
  }
  const pending = (await migratorOf(db).getMigrations()).filter((m) => m.executedAt === undefined)
  if (pending.length > 0) {
    const { rows } = await sql<{ role: string }>`select current_user as role`.execute(db)
    throw new Error(
      `the database lacks ${pending.length} migration(s) (first: ${pending[0]!.name}) and the role ${rows[0]?.role ?? '?'} of DATABASE_URL ` +
      'does not own its tables: run `npm run migrate` with DATABASE_OWNER_URL set to the owner\'s connection, then start the service'
    )
  }
}
