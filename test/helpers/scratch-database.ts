// A Postgres database of a test's own on the shared server (created from DATABASE_URL's superuser
// connection, dropped at the end), for tests whose work is database-wide — pruning with a clock
// moved a month ahead, roles and grants — and so must not touch the rows of test files running
// beside them. `migrated: true` starts it as a copy of a migrated template (database-template.ts).
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { migratedPostgresTemplate } from './database-template.js'

export interface ScratchDatabase {
  readonly name: string
  /** Its URL, as `user` (default: the superuser of DATABASE_URL). */
  urlAs (user?: string): string
  /** One statement as the superuser, on the `postgres` database or this one. */
  superuser (statement: string, options?: { here?: boolean }): Promise<void>
  drop (): Promise<void>
}

export async function createScratchDatabase (superuserUrl: string, label: string, options: { owner?: string, migrated?: boolean } = {}): Promise<ScratchDatabase> {
  const name = `${label}_${randomBytes(4).toString('hex')}`
  const urlAs = (user?: string, database = name): string => {
    const url = new URL(superuserUrl)
    if (user !== undefined) {
      url.username = user
      url.password = ''
    }
    url.pathname = `/${database}`
    return url.toString()
  }
  const superuser = async (statement: string, where: { here?: boolean } = {}): Promise<void> => {
    const client = new pg.Client({ connectionString: where.here === true ? urlAs() : urlAs(undefined, 'postgres') })
    await client.connect()
    try { await client.query(statement) } finally { await client.end() }
  }
  const template = options.migrated === true ? ` template ${await migratedPostgresTemplate(superuserUrl)}` : ''
  await superuser(`create database ${name}${template}${options.owner === undefined ? '' : ` owner ${options.owner}`}`)
  return {
    name,
    urlAs,
    superuser,
    drop: async () => { await superuser(`drop database if exists ${name} with (force)`) }
  }
}
