// Migrated databases to start tests from, so an app under test opens a database whose migrations
// already ran instead of running all of them again (the app still checks and applies any pending
// one, as at every start).
// PGlite: one data directory migrated once per set of migrations, shared by every test process on
// the machine (keyed by the migrations' content and PGlite's version) and copied into each test's
// DATA_DIR. Postgres: one migrated database per DATABASE_URL and set of migrations, kept as a
// template that scratch databases are created from (`CREATE DATABASE … TEMPLATE`).
import { createHash } from 'node:crypto'
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { openDatabase } from '../../src/db/database.js'
import { scratchRoot, temporaryDir } from './temp-dirs.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const migrationsDir = join(root, 'migrations')

/** What a migrated database depends on: every migration file, and the PGlite that wrote it. */
function migrationsKey (): string {
  const hash = createHash('sha256')
  for (const name of readdirSync(migrationsDir).sort()) hash.update(name).update(readFileSync(join(migrationsDir, name)))
  hash.update(readFileSync(join(root, 'node_modules', '@electric-sql', 'pglite', 'package.json')))
  return hash.digest('hex').slice(0, 16)
}

/**
 * The migrated PGlite data directory (made on first use; test files running in parallel may each
 * make one: the first to finish is kept, the others are thrown away).
 */
async function migratedPgliteDirectory (): Promise<string> {
  const template = join(scratchRoot, `canvas-test-pglite-${migrationsKey()}`)
  if (existsSync(template)) return template
  const building = mkdtempSync(join(scratchRoot, 'canvas-test-pglite-building-'))
  try {
    const handle = await openDatabase({ databaseUrl: undefined, dataDir: building })
    await handle.close()
    try {
      renameSync(join(building, 'pglite'), template)
    } catch (error) {
      // Another process finished first: its copy is as good as ours.
      if (!existsSync(template)) throw error
    }
  } finally {
    rmSync(building, { recursive: true, force: true })
  }
  return template
}

const pgliteTemplate = await migratedPgliteDirectory()

/** A new DATA_DIR whose embedded database is a copy of the migrated one (DATA_DIR/pglite). */
export function migratedDataDir (prefix?: string): string {
  const dir = temporaryDir(prefix)
  cpSync(pgliteTemplate, join(dir, 'pglite'), { recursive: true })
  return dir
}

/**
 * The name of a migrated database on the Postgres of `superuserUrl`, to create others from: made on
 * first use (by the first test process to ask; the others wait for it), never connected to
 * afterwards, as a template must not be.
 */
export async function migratedPostgresTemplate (superuserUrl: string): Promise<string> {
  const base = new URL(superuserUrl).pathname.slice(1) || 'postgres'
  const name = `${base}_tpl_${migrationsKey()}`
  const admin = new pg.Client({ connectionString: withDatabase(superuserUrl, 'postgres') })
  await admin.connect()
  try {
    // One builder at a time across processes; the others find the template done.
    await admin.query('select pg_advisory_lock(hashtext($1))', [name])
    const found = await admin.query<{ ready: boolean }>('select datistemplate as ready from pg_database where datname = $1', [name])
    if (found.rows[0]?.ready === true) return name
    if (found.rows.length > 0) await admin.query(`drop database ${name} with (force)`) // a build that died half-way
    await admin.query(`create database ${name}`)
    const handle = await openDatabase({ databaseUrl: withDatabase(superuserUrl, name), dataDir: scratchRoot, databasePoolSize: 1 })
    await handle.close()
    await admin.query(`alter database ${name} is_template true`)
    return name
  } finally {
    await admin.end()
  }
}

function withDatabase (url: string, database: string): string {
  const parsed = new URL(url)
  parsed.pathname = `/${database}`
  return parsed.toString()
}
