// The service's own database role, when it is not the tables' owner (DECISIONS §17; docs/operations.md,
// *Two database roles*): `npm run migrate` connects as the owner (DATABASE_OWNER_URL) and, after the
// migrations, grants the role DATABASE_URL names what the service needs and nothing more. Re-applied on
// every run, so a table a new migration adds is covered without default privileges.
//
// Every table: SELECT, INSERT, UPDATE, DELETE (no TRUNCATE, REFERENCES or TRIGGER). The audit log:
// SELECT and INSERT only — the service can neither change its rows nor, not owning it, disable the
// trigger that refuses changes. The migration tables: SELECT only, so the service can check at start
// that no migration is pending (src/db/migrate.ts) and never take the migration lock.
import { sql, type Kysely } from 'kysely'

/** The tables the service reads and appends to, but never changes. */
export const APPEND_ONLY_TABLES = ['admin_audit_log'] as const
const MIGRATION_TABLES = ['kysely_migration', 'kysely_migration_lock'] as const

/** The role a Postgres URL logs in as; undefined when the URL names none. */
export function roleOfUrl (url: string): string | undefined {
  const user = decodeURIComponent(new URL(url).username)
  return user === '' ? undefined : user
}

export async function grantServiceRole<DB> (db: Kysely<DB>, role: string): Promise<void> {
  const grantee = sql.id(role)
  const tables = (names: readonly string[]) => sql.join(names.map((name) => sql.id(name)))
  await db.transaction().execute(async (trx) => {
    const schema = sql.id((await sql<{ schema: string }>`select current_schema() as schema`.execute(trx)).rows[0]!.schema)
    await sql`grant usage on schema ${schema} to ${grantee}`.execute(trx)
    await sql`revoke all on all tables in schema ${schema} from ${grantee}`.execute(trx)
    await sql`grant select, insert, update, delete on all tables in schema ${schema} to ${grantee}`.execute(trx)
    await sql`grant usage, select on all sequences in schema ${schema} to ${grantee}`.execute(trx)
    await sql`revoke all on ${tables([...APPEND_ONLY_TABLES, ...MIGRATION_TABLES])} from ${grantee}`.execute(trx)
    await sql`grant select, insert on ${tables(APPEND_ONLY_TABLES)} to ${grantee}`.execute(trx)
    await sql`grant select on ${tables(MIGRATION_TABLES)} to ${grantee}`.execute(trx)
  })
}
