// Where the shared Redis is: one server (`redis://`, `rediss://`), or the master of a Sentinel set,
// which ioredis asks the Sentinels for and follows through a failover (src/infra/redis.ts).
// The Sentinel form is one URL, `redis+sentinel://[[user]:password@]host:port[,host:port…]/name[/db]`
// (the password is the master's and its replicas'), or REDIS_SENTINELS + REDIS_SENTINEL_NAME.

export interface SentinelAddress {
  readonly host: string
  readonly port: number
}

export type RedisTarget =
  | { readonly kind: 'server', readonly url: string }
  | {
    readonly kind: 'sentinel'
    readonly sentinels: readonly SentinelAddress[]
    /** The master group's name, as the Sentinels know it (`sentinel monitor <name> …`). */
    readonly name: string
    readonly db: number
    readonly username?: string
    readonly password?: string
  }

const SENTINEL_SCHEME = 'redis+sentinel://'
const DEFAULT_SENTINEL_PORT = 26379
/** A Sentinel set is a handful of processes; a longer list is a mistake, not a deployment. */
const MAX_SENTINELS = 32

/** `host:port` or `[ipv6]:port`; the port defaults to Sentinel's own. Throws a message naming the entry. */
function sentinelAddress (entry: string): SentinelAddress {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]+))(?::(\d{1,5}))?$/.exec(entry.trim())
  const host = match?.[1] ?? match?.[2]
  const port = match?.[3] === undefined ? DEFAULT_SENTINEL_PORT : Number(match[3])
  if (host === undefined || port < 1 || port > 65535) throw new Error(`"${entry}" is not a Sentinel address (host:port)`)
  return { host, port }
}

function sentinelList (list: string): SentinelAddress[] {
  const entries = list.split(',').filter((entry) => entry.trim() !== '')
  if (entries.length === 0) throw new Error('names no Sentinel (host:port,host:port…)')
  if (entries.length > MAX_SENTINELS) throw new Error(`names ${entries.length} Sentinels, at most ${MAX_SENTINELS}`)
  return entries.map(sentinelAddress)
}

function masterName (name: string): string {
  if (!/^[A-Za-z0-9._-]{1,128}$/.test(name)) throw new Error(`"${name}" is not a Sentinel master name (letters, digits, . _ -)`)
  return name
}

/** REDIS_SENTINELS (`host:port,host:port`) and REDIS_SENTINEL_NAME. */
export function sentinelTarget (sentinels: string, name: string): RedisTarget {
  return { kind: 'sentinel', sentinels: sentinelList(sentinels), name: masterName(name), db: 0 }
}

/** REDIS_URL; throws a message (without the password) when it is not a Redis or Sentinel URL. */
export function parseRedisTarget (raw: string): RedisTarget {
  if (raw.startsWith(SENTINEL_SCHEME)) {
    const rest = raw.slice(SENTINEL_SCHEME.length)
    const at = rest.lastIndexOf('@')
    const credentials = at === -1 ? undefined : rest.slice(0, at)
    const [hosts = '', name = '', db = '0', ...extra] = rest.slice(at + 1).replace(/\/+$/, '').split('/')
    if (name === '' || extra.length > 0 || !/^\d{1,2}$/.test(db)) {
      throw new Error('must be redis+sentinel://[[user]:password@]host:port[,host:port…]/<master name>[/<db>]')
    }
    const colon = credentials?.indexOf(':') ?? -1
    const username = credentials === undefined ? '' : decodeURIComponent(colon === -1 ? credentials : credentials.slice(0, colon))
    const password = credentials === undefined || colon === -1 ? '' : decodeURIComponent(credentials.slice(colon + 1))
    return {
      kind: 'sentinel',
      sentinels: sentinelList(hosts),
      name: masterName(name),
      db: Number(db),
      ...(username === '' ? {} : { username }),
      ...(password === '' ? {} : { password })
    }
  }
  let parsed: URL
  try {
    parsed = new URL(raw)
  } catch {
    throw new Error('must be a URL (redis://, rediss:// or redis+sentinel://)')
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new Error(`must use redis:, rediss: or redis+sentinel:, got "${parsed.protocol}"`)
  }
  return { kind: 'server', url: raw.replace(/\/+$/, '') }
}
