// A PgBouncer of the test's own (Debian's `pgbouncer`), in transaction pooling mode, in front of a
// Postgres the test names: a free loopback port, trust auth, a small server pool, stopped by its PID.
// Run as the `postgres` user when this process is root (PgBouncer refuses to run as root).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { chownSync, existsSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { userInfo } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { freePort } from './own-redis.js'
import { temporaryDir } from './temp-dirs.js'

export const PGBOUNCER = '/usr/sbin/pgbouncer'
const SETPRIV = '/usr/bin/setpriv'

export interface OwnPgBouncer {
  readonly port: number
  /** Its process (benchmarks read its CPU time). */
  readonly pid: number | undefined
  /** Server connections PgBouncer opens per database and user at most (`default_pool_size`). */
  readonly poolSize: number
  /** The target URL with its host and port replaced by the pooler's. */
  readonly url: string
  /** The same for another database or user of the target. */
  urlFor (target: string): string
  /** A `SHOW …` of the admin console (`SHOW POOLS`, `SHOW SERVERS`), as rows. */
  show (what: string): Promise<Array<Record<string, unknown>>>
  stop (): Promise<void>
}

export function ownPgBouncerUnavailable (): string | undefined {
  if (!existsSync(PGBOUNCER)) return 'pgbouncer is not installed (apt-get install -y pgbouncer)'
  if (userInfo().uid === 0 && spawnSync('id', ['-u', 'postgres']).status !== 0) return 'running as root, and there is no postgres user to run pgbouncer as'
  return undefined
}

async function listening (port: number, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 10_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited with ${child.exitCode}: ${output()}`)
    const up = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1')
      socket.once('connect', () => { socket.destroy(); resolve(true) })
      socket.once('error', () => { resolve(false) })
    })
    if (up) return
    if (Date.now() > deadline) throw new Error(`pgbouncer did not listen on ${port}: ${output()}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/**
 * Starts PgBouncer in front of `target` (any database of its server, under the same name). The users
 * it lets in are `users` (default: the target's): trust auth, as the test Postgres has.
 */
export async function startOwnPgBouncer (target: string, options: { poolSize?: number, maxClients?: number, users?: string[] } = {}): Promise<OwnPgBouncer> {
  const poolSize = options.poolSize ?? 4
  const parsed = new URL(target)
  const users = options.users ?? [decodeURIComponent(parsed.username || 'postgres')]
  const dir = temporaryDir('canvas-pgbouncer-')
  const port = await freePort()
  const ini = join(dir, 'pgbouncer.ini')
  writeFileSync(join(dir, 'users.txt'), users.map((user) => `"${user}" ""\n`).join(''))
  writeFileSync(ini, [
    '[databases]',
    `* = host=${parsed.hostname} port=${parsed.port || '5432'}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = trust',
    `auth_file = ${join(dir, 'users.txt')}`,
    `admin_users = ${users[0] ?? 'postgres'}`,
    'pool_mode = transaction',
    `default_pool_size = ${poolSize}`,
    'reserve_pool_size = 0',
    `max_client_conn = ${options.maxClients ?? 500}`,
    // A client waiting for a server connection gets an error (class 08: 503 from the service) rather
    // than hanging for PgBouncer's default 2 minutes.
    'query_wait_timeout = 10',
    'log_connections = 0',
    'log_disconnections = 0',
    ''
  ].join('\n'))
  const asRoot = userInfo().uid === 0
  if (asRoot) {
    const uid = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim())
    const gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim())
    for (const file of [dir, ini, join(dir, 'users.txt')]) chownSync(file, uid, gid)
  }
  // util-linux's setpriv runs it as `postgres` and has the kernel kill it should this process die in
  // any way (a test timed out and killed), which no exit handler sees.
  const setpriv = existsSync(SETPRIV)
  const child = setpriv
    ? spawn(SETPRIV, [...(asRoot ? ['--reuid', 'postgres', '--regid', 'postgres', '--init-groups'] : []), '--pdeathsig', 'KILL', PGBOUNCER, ini], { stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(PGBOUNCER, asRoot ? ['-u', 'postgres', ini] : [ini], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => { output = (output + chunk.toString()).slice(-4_000) })
  child.stderr?.on('data', (chunk: Buffer) => { output = (output + chunk.toString()).slice(-4_000) })
  // Should the test process die, the pooler must not outlive it: stopped by its PID.
  const killOnExit = (): void => { if (child.pid !== undefined && child.exitCode === null) process.kill(child.pid, 'SIGKILL') }
  process.on('exit', killOnExit)
  // It lives as long as the process that uses it, without keeping that process alive.
  child.unref()
  for (const pipe of [child.stdout, child.stderr]) (pipe as (typeof pipe & { unref?: () => void }) | null)?.unref?.()
  try {
    await listening(port, child, () => output)
  } catch (error) {
    killOnExit()
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  const urlFor = (url: string): string => {
    const through = new URL(url)
    through.hostname = '127.0.0.1'
    through.port = String(port)
    return through.toString()
  }
  return {
    port,
    pid: child.pid,
    poolSize,
    url: urlFor(target),
    urlFor,
    async show (what) {
      const admin = new pg.Client({ connectionString: `postgres://${users[0] ?? 'postgres'}@127.0.0.1:${port}/pgbouncer` })
      admin.on('error', () => {})
      await admin.connect()
      try {
        // The admin console speaks the simple query protocol only: no parameters.
        return (await admin.query<Record<string, unknown>>(`show ${what}`)).rows
      } finally {
        await admin.end().catch(() => {})
      }
    },
    async stop () {
      process.off('exit', killOnExit)
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
        child.ref() // waited for now: it must keep this process alive until it is gone
        const exited = new Promise((resolve) => child.once('exit', resolve))
        process.kill(child.pid, 'SIGINT') // PgBouncer's immediate shutdown
        await exited
      }
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
