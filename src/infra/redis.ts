// The shared Redis client (rate-limit counters, stream caps). Commands never queue while Redis is
// down and time out quickly: callers fall back to per-instance memory instead of waiting.
// With a Sentinel set, ioredis asks the Sentinels for the master, connects only to a server whose
// ROLE is master, and on a failover (the connection lost, or the Sentinels' `+switch-master`) asks
// again: while there is no master, commands fail at once and callers count locally; once the
// replica is promoted, the next reconnect reaches it and shared counting resumes.
import { Redis, type RedisOptions } from 'ioredis'
import type { RedisTarget } from './redis-target.js'

/**
 * A command with no reply by then fails (and the rate limiter falls back to memory until a PING
 * answers). Above the longest wait of any rate-limit tier (src/ratelimit/tiers.ts), so a Redis that
 * is slow but answering keeps counting shared for the tiers that wait for it.
 */
export const REDIS_COMMAND_TIMEOUT_MS = 500

/**
 * The rate limiter's script command (src/ratelimit/counter-store.ts). It already sends one call per
 * turn of the event loop for every count of that turn, so ioredis's auto-pipelining would only wrap
 * each call in a Pipeline of one and put it off a tick: measured on `/me` with the Redis store, 8 %
 * more req/s without it at 50 connections and 28 % more at 10.
 */
export const RATE_LIMIT_HITS_COMMAND = 'rateLimitHits'

/** Reconnecting (to a server, or asking the Sentinels again) never waits longer than this between tries. */
const RECONNECT_MAX_MS = 500

/**
 * With Sentinels, a connection attempt to the address they give gives up after this: right after a
 * failover they may still name the old master, and one that vanished from the network (rather than
 * refusing) would otherwise hold the next try back for ioredis's default 10 s.
 */
const SENTINEL_CONNECT_TIMEOUT_MS = 1_000

const COMMON: RedisOptions = {
  lazyConnect: false,
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
  enableAutoPipelining: true,
  autoPipeliningIgnoredCommands: [RATE_LIMIT_HITS_COMMAND],
  // Keep trying to reconnect forever, but never more often than every 500 ms.
  retryStrategy: (attempt) => Math.min(attempt * 50, RECONNECT_MAX_MS)
}

export function createRedis (where: RedisTarget): Redis {
  const redis = where.kind === 'server'
    ? new Redis(where.url, COMMON)
    : new Redis({
      ...COMMON,
      sentinels: where.sentinels.map(({ host, port }) => ({ host, port })),
      name: where.name,
      role: 'master',
      db: where.db,
      ...(where.username === undefined ? {} : { username: where.username }),
      ...(where.password === undefined ? {} : { password: where.password }),
      connectTimeout: SENTINEL_CONNECT_TIMEOUT_MS,
      sentinelCommandTimeout: SENTINEL_CONNECT_TIMEOUT_MS,
      // All Sentinels unreachable: ask them again, never more often than every 500 ms and forever.
      sentinelRetryStrategy: (attempt) => Math.min(attempt * 50, RECONNECT_MAX_MS),
      // Reconnect as soon as the Sentinels announce a new master, not only when the old one's
      // connection drops (a master cut off by the network may keep its clients' sockets open).
      failoverDetector: true
    })
  // Connection errors are expected while Redis is down; health and the limiter report them.
  redis.on('error', () => {})
  return redis
}

/** Creates the client and gives it a moment to connect, so the first requests after start count in Redis. */
export async function connectRedis (target: RedisTarget, waitMs = 1_000): Promise<Redis> {
  const redis = createRedis(target)
  if (redis.status === 'ready') return redis
  await new Promise<void>((resolve) => {
    const timer = setTimeout(done, waitMs)
    function done (): void {
      clearTimeout(timer)
      redis.off('ready', done)
      resolve()
    }
    redis.once('ready', done)
  })
  return redis
}
