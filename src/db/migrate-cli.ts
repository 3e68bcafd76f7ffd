// `npm run migrate`: applies pending migrations to the configured database, then exits. With
// DATABASE_OWNER_URL it connects as the tables' owner and then grants the role of DATABASE_URL what
// the service needs (src/db/service-role.ts): the two-role setup of docs/operations.md.
import { loadConfig } from '../config.js'
import { openDatabase } from './database.js'
import { grantServiceRole, roleOfUrl } from './service-role.js'
import { sql } from 'kysely'

const config = loadConfig()
// Migrations run on the direct connection (DATABASE_DIRECT_URL, bypassing a transaction pooler), or
// as the owner when DATABASE_OWNER_URL names one.
const handle = await openDatabase({ ...config, databaseUrl: config.databaseOwnerUrl ?? config.databaseUrl, databaseDirectUrl: config.databaseOwnerUrl ?? config.databaseDirectUrl, databasePoolSize: 2 })
try {
  if (config.databaseOwnerUrl !== undefined && config.databaseUrl !== undefined) {
    const serviceRole = roleOfUrl(config.databaseUrl)
    if (serviceRole === undefined) throw new Error('DATABASE_URL must name the service\'s role (postgres://canvas_app@host/db) when DATABASE_OWNER_URL is set')
    const { rows } = await sql<{ role: string }>`select current_user as role`.execute(handle.db)
    if (rows[0]?.role !== serviceRole) {
      await grantServiceRole(handle.db, serviceRole)
      console.log(`migrations applied (${handle.kind}) as ${rows[0]?.role ?? '?'}; ${serviceRole} granted the service's privileges`)
    } else {
      console.log(`migrations applied (${handle.kind}); DATABASE_URL and DATABASE_OWNER_URL name one role, ${serviceRole}`)
    }
  } else {
    console.log(`migrations applied (${handle.kind})`)
  }
} finally {
  await handle.close()
}
