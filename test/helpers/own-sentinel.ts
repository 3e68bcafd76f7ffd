// A Redis Sentinel set of the test's own (Debian's `redis-server` and `redis-sentinel`): one master,
// one replica and three Sentinels (quorum 2) on free loopback ports, no persistence, every process
// the test's own and stopped by its PID. A master that stops answering is declared down after 1 s.
import type { ChildProcess } from 'node:child_process'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { ended, freePort, launchRedisProcess } from './own-redis.js'

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
  const dir = mkdtempSync(join(tmpdir(), 'canvas-sentinel-'))
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

  async function masterNow (): Promise<number> {
    const sentinel = new Redis({ port: sentinelPorts[0], host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false })
    sentinel.on('error', () => {})
    try {
      await sentinel.connect()
      const reply = await sentinel.call('sentinel', 'get-master-addr-by-name', SENTINEL_MASTER_NAME) as [string, string]
      return Number(reply[1])
    } finally {
      sentinel.disconnect()
    }
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
