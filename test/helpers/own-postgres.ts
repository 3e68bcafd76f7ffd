// A Postgres cluster of the test's own (initdb into a temporary folder, trust auth, loopback, a free
// port), which the test may restart, stop, start and cut connections on — never the machine's
// shared Postgres, which other test files use at the same time. Run as the `postgres` user when
// this process is root (Postgres refuses to run as root).
import { execFile, spawnSync } from 'node:child_process'
import { chownSync, existsSync, readdirSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { userInfo } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { temporaryDir } from './temp-dirs.js'

export interface OwnPostgres {
  /** `postgres://postgres@127.0.0.1:PORT/postgres` */
  readonly url: string
  readonly port: number
  /** The URL of another role or database on this cluster. */
  urlFor (options: { user?: string, database?: string }): string
  /** Runs one statement as the superuser on a short-lived connection (to `postgres`, or `database`). */
  query (statement: string, options?: { params?: unknown[], database?: string }): Promise<Array<Record<string, unknown>>>
  /** `pg_ctl restart -m fast`: every connection is cut, the server is back when this resolves. */
  restart (): Promise<void>
  /** `pg_ctl stop -m fast`: connections are cut and new ones refused until `start`. */
  stop (): Promise<void>
  start (): Promise<void>
  /** pg_terminate_backend of every other client connection (of one role, when given); how many. */
  terminateBackends (user?: string): Promise<number>
  /**
   * A backup as a restore would bring back: the server is stopped, its folder copied, and started
   * again; the returned function stops it, puts that copy back and starts it (the cluster is then as
   * it was, its transaction ids included, as after a point-in-time restore).
   */
  backup (): Promise<() => Promise<void>>
  /** Stops the server and removes its folder. */
  destroy (): Promise<void>
}

/** Where initdb and pg_ctl live: the newest /usr/lib/postgresql/<version>/bin, or the PATH. */
function postgresBinaries (): string | undefined {
  const root = '/usr/lib/postgresql'
  if (existsSync(root)) {
    const versions = readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a))
    if (versions[0] !== undefined) return join(root, versions[0], 'bin')
  }
  const which = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' })
  const found = which.stdout.trim()
  return which.status === 0 && found !== '' ? join(found, '..') : undefined
}

const asRoot = userInfo().uid === 0

/** The `postgres` user's uid (`-u`) or gid (`-g`), or undefined when there is no such user. */
function idOf (flag: '-u' | '-g'): number | undefined {
  const result = spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' })
  return result.status === 0 ? Number(result.stdout.trim()) : undefined
}

/** Why this machine cannot run a cluster of a test's own (for a skip), or undefined when it can. */
export function ownPostgresUnavailable (): string | undefined {
  if (postgresBinaries() === undefined) return 'initdb is not available'
  if (asRoot && idOf('-u') === undefined) return 'running as root, and there is no postgres user to run Postgres as'
  return undefined
}

async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = typeof address === 'object' && address !== null ? address.port : 0
      server.close(() => { resolve(port) })
    })
  })
}

const execFileAsync = promisify(execFile)

/** Command and arguments that run a Postgres program as the `postgres` user when we are root. */
function invocation (bin: string, program: string, args: string[]): [string, string[]] {
  return asRoot ? ['runuser', ['-u', 'postgres', '--', join(bin, program), ...args]] : [join(bin, program), args]
}

/**
 * Runs a Postgres binary, as the `postgres` user when we are root; throws with its output on failure.
 * Asynchronously: the app under test runs in this process, and a blocked event loop would hold its
 * requests back while the server stops or starts, hiding exactly what the test wants to see.
 */
async function run (bin: string, program: string, args: string[]): Promise<void> {
  try {
    await execFileAsync(...invocation(bin, program, args), { encoding: 'utf8', timeout: 60_000 })
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string, stderr?: string }
    throw new Error(`${program} ${args.join(' ')} failed: ${stdout}${stderr}`, { cause: error })
  }
}

/** `settings`: server settings for its command line (`-c name=value`), e.g. `{ wal_level: 'minimal' }`. */
export async function startOwnPostgres ({ settings = {} }: { settings?: Record<string, string> } = {}): Promise<OwnPostgres> {
  const bin = postgresBinaries()
  if (bin === undefined) throw new Error('initdb not found')
  const dir = temporaryDir('canvas-pg-')
  const uid = idOf('-u')
  const gid = idOf('-g')
  if (asRoot && uid !== undefined && gid !== undefined) chownSync(dir, uid, gid)
  const data = join(dir, 'data')
  const log = join(dir, 'log')
  const port = await freePort()
  // fsync off: the data is thrown away; a clean `-m fast` shutdown loses nothing anyway.
  const options = [`-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`, ...Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`)].join(' ')
  const start = async (): Promise<void> => { await run(bin, 'pg_ctl', ['-D', data, '-o', options, '-l', log, '-w', 'start']) }
  const stop = async (): Promise<void> => { await run(bin, 'pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']) }
  // Postgres runs detached from this process: should the test process die (the very failure these
  // tests look for), the server must not outlive it.
  const stopOnExit = (): void => {
    spawnSync(...invocation(bin, 'pg_ctl', ['-D', data, '-m', 'immediate', 'stop']), { stdio: 'ignore' })
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    await run(bin, 'initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync'])
    await start()
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  process.on('exit', stopOnExit)
  const urlFor = ({ user = 'postgres', database = 'postgres' }: { user?: string, database?: string }): string =>
    `postgres://${user}@127.0.0.1:${port}/${database}`
  const url = urlFor({})
  async function query (statement: string, { params = [], database }: { params?: unknown[], database?: string } = {}): Promise<Array<Record<string, unknown>>> {
    const client = new pg.Client({ connectionString: urlFor({ database }) })
    client.on('error', () => {})
    await client.connect()
    try {
      return (await client.query<Record<string, unknown>>(statement, params)).rows
    } finally {
      await client.end().catch(() => {})
    }
  }
  return {
    url,
    port,
    urlFor,
    query,
    restart: async () => { await run(bin, 'pg_ctl', ['-D', data, '-o', options, '-l', log, '-m', 'fast', '-w', 'restart']) },
    stop,
    start,
    async terminateBackends (user) {
      // The function runs in the select list, so only on the rows the filter kept.
      const rows = await query(`select count(*)::int as n from (select pg_terminate_backend(pid) from pg_stat_activity
        where pid <> pg_backend_pid() and backend_type = 'client backend' and ($1::text is null or usename = $1)) cut`, { params: [user ?? null] })
      return Number(rows[0]?.n ?? 0)
    },
    async backup () {
      await stop()
      const copy = join(dir, `backup-${Date.now()}`)
      await execFileAsync('cp', ['-a', data, copy])
      await start()
      return async () => {
        await stop()
        rmSync(data, { recursive: true, force: true })
        await execFileAsync('cp', ['-a', copy, data])
        await start()
      }
    },
    async destroy () {
      process.off('exit', stopOnExit)
      try { await stop() } catch {} // already stopped
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
