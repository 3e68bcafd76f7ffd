// A Redis Sentinel set of the test's own (Debian's `redis-server` and `redis-sentinel`): one master,
// one replica and three Sentinels (quorum 2) on free loopback ports, no persistence, every process
// the test's own and stopped by its PID. A master that stops answering is declared down after 1 s.
import type { ChildProcess } from 'node:child_process'
import { spawnSync } from 'node:child_process'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { ended, freePort, launchRedisProcess } from './own-redis.js'
import { temporaryDir } from './temp-dirs.js'

export const SENTINEL_MASTER_NAME = 'canvasmaster'
const DOWN_AFTER_MS = 1_000

export interface OwnSentinelSet {
  /** `redis+sentinel://127.0.0.1:S1,127.0.0.1:S2,127.0.0.1:S3/<name>` */
  readonly url: string
  /** `host:port,host:port,host:port`, for REDIS_SENTINELS. */
  readonly sentinels: string
  /** The port of the server the Sentinels name as master now. */
  masterPort (): Promise<number>
  /** Ports of the two data servers, the first master at the start. */
  readonly dataPorts: readonly [number, number]
  /** SIGKILL to the server that is master now; resolves with its port. */
  killMaster (): Promise<number>
  stop (): Promise<void>
}

export function ownSentinelUnavailable (): string | undefined {
  for (const program of ['redis-server', 'redis-sentinel']) {
    if (spawnSync('sh', ['-c', `command -v ${program}`]).status !== 0) return `${program} is not installed (apt-get install -y redis-sentinel)`
  }
  return undefined
}

/** Each server in a folder of its own: replication writes an RDB file there even without `save`. */
function dataArgs (dir: string, port: number): string[] {
  const own = join(dir, String(port))
  mkdirSync(own)
  return ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', own]
}

export async function startOwnSentinelSet (): Promise<OwnSentinelSet> {
  const dir = temporaryDir('canvas-sentinel-')
  const masterPort = await freePort()
  const replicaPort = await freePort()
  const sentinelPorts = [await freePort(), await freePort(), await freePort()]
  const data = new Map<number, ChildProcess>()
  const sentinels: ChildProcess[] = []
  const all = (): ChildProcess[] => [...data.values(), ...sentinels]
  // Should the test process die, none of these may outlive it.
  const killOnExit = (): void => { for (const child of all()) if (child.pid !== undefined && child.exitCode === null) process.kill(child.pid, 'SIGKILL') }
  process.on('exit', killOnExit)
  try {
    data.set(masterPort, await launchRedisProcess('redis-server', dataArgs(dir, masterPort), 'Ready to accept connections'))
    data.set(replicaPort, await launchRedisProcess('redis-server', [...dataArgs(dir, replicaPort), '--replicaof', '127.0.0.1', String(masterPort)], 'MASTER <-> REPLICA sync: Finished'))
    for (const port of sentinelPorts) {
      // A Sentinel rewrites its configuration file as it learns the set: one writable file each.
      const file = join(dir, `sentinel-${port}.conf`)
      writeFileSync(file, [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${SENTINEL_MASTER_NAME} 127.0.0.1 ${masterPort} 2`,
        `sentinel down-after-milliseconds ${SENTINEL_MASTER_NAME} ${DOWN_AFTER_MS}`,
        `sentinel failover-timeout ${SENTINEL_MASTER_NAME} 10000`,
        `sentinel parallel-syncs ${SENTINEL_MASTER_NAME} 1`,
        ''
      ].join('\n'))
      sentinels.push(await launchRedisProcess('redis-sentinel', [file], '+monitor master'))
    }
  } catch (error) {
    killOnExit()
    process.off('exit', killOnExit)
    rmSync(dir, { recursive: true, force: true })
    throw error
  }

  async function askSentinel<T> (port: number, ...args: string[]): Promise<T> {
    const sentinel = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false })
    sentinel.on('error', () => {})
    try {
      await sentinel.connect()
      return await sentinel.call('sentinel', ...args) as T
    } finally {
      sentinel.disconnect()
    }
  }

  async function masterNow (): Promise<number> {
    const reply = await askSentinel<[string, string]>(sentinelPorts[0]!, 'get-master-addr-by-name', SENTINEL_MASTER_NAME)
    return Number(reply[1])
  }

  /**
   * A failover needs every Sentinel to know the replica (from the master's INFO) and the other two
   * (from their hello messages, every 2 s): until then a dead master is never replaced.
   */
  async function assembled (): Promise<boolean> {
    for (const port of sentinelPorts) {
      const fields = await askSentinel<string[]>(port, 'master', SENTINEL_MASTER_NAME)
      const field = (name: string): number => Number(fields[fields.indexOf(name) + 1])
      if (field('num-slaves') < 1 || field('num-other-sentinels') < 2) return false
    }
    return true
  }
  try {
    const deadline = Date.now() + 60_000
    while (!await assembled()) {
      if (Date.now() > deadline) throw new Error('the Sentinels did not find the replica and each other within 60 s')
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  } catch (error) {
    killOnExit()
    process.off('exit', killOnExit)
    rmSync(dir, { recursive: true, force: true })
    throw error
  }

  const list = sentinelPorts.map((port) => `127.0.0.1:${port}`).join(',')
  return {
    url: `redis+sentinel://${list}/${SENTINEL_MASTER_NAME}`,
    sentinels: list,
    dataPorts: [masterPort, replicaPort],
    masterPort: masterNow,
    async killMaster () {
      const port = await masterNow()
      const child = data.get(port)
      if (child === undefined) throw new Error(`the Sentinels name ${port}, not a server of this set`)
      await ended(child, 'SIGKILL')
      return port
    },
    async stop () {
      process.off('exit', killOnExit)
      await Promise.all(all().map(async (child) => { await ended(child, 'SIGTERM') }))
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
