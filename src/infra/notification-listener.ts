// The LISTEN side of Postgres notifications, for the live event channel (src/live).
// Embedded: PGlite delivers notifications in-process, on commit, to every callback registered on
// the instance (two apps sharing one PGlite both hear everything). Postgres: one dedicated
// `pg.Client` (a pooled client would lose its LISTEN when returned to the pool), reconnected at
// least every 250 ms; after a reconnect `onResume` handlers run so callers can catch up on what the
// gap hid. A listening connection only ever receives, so a half-open one (the server or a NAT box
// gone without a word) would go unnoticed until TCP keepalive gives up, hours later: it is probed
// with a small query every few seconds, and one that does not answer in time is replaced.
import type { PGlite } from '@electric-sql/pglite'
import pg from 'pg'
import type { Logger } from './logger.js'
import { CONNECT_TIMEOUT_MS } from '../db/postgres-pool.js'
import { logThrottled } from './throttled-log.js'

export type NotificationHandler = (payload: string) => void

export interface NotificationListener {
  /** Starts listening on `channel` (a plain lower-case identifier); resolves once LISTEN is in effect. */
  listen (channel: string, handler: NotificationHandler): Promise<void>
  /** Runs after the connection was lost and LISTEN is in effect again. */
  onResume (handler: () => void): void
  close (): Promise<void>
}

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/

function checkChannel (channel: string): void {
  if (!IDENTIFIER.test(channel)) throw new Error(`invalid notification channel name: ${channel}`)
}

/**
 * PGlite: `onNotification` sees every channel; LISTEN is issued through `run` (the app's query
 * path, which serialises PGlite access), so it never lands inside someone else's open transaction.
 */
export function pgliteListener (pglite: PGlite, run: (statement: string) => Promise<void>): NotificationListener {
  const handlers = new Map<string, NotificationHandler>()
  const off = pglite.onNotification((channel, payload) => {
    handlers.get(channel)?.(payload)
  })
  return {
    async listen (channel, handler) {
      checkChannel(channel)
      handlers.set(channel, handler)
      await run(`listen ${channel}`)
    },
    onResume () {
      // An in-process database never drops the connection.
    },
    async close () {
      // No UNLISTEN: another app may share this PGlite and listen on the same channel.
      off()
      handlers.clear()
    }
  }
}

// A lost listening connection is retried quickly and often: until it is back, this instance hears
// nothing from the others. An attempt against a server that is down fails at once (refused), so
// retrying every quarter second costs next to nothing, and recovery follows the server within that.
const RECONNECT_FIRST_MS = 50
const RECONNECT_MAX_MS = 250
/** The listening connection is asked to answer this often, and given this long to. */
export const LISTEN_PROBE_EVERY_MS = 5_000
export const LISTEN_PROBE_TIMEOUT_MS = 3_000

/** Postgres: a dedicated connection that is re-established (every 250 ms at most) whenever it drops. */
export function postgresListener (connectionString: string, log: Logger): NotificationListener {
  const handlers = new Map<string, NotificationHandler>()
  const resumeHandlers: Array<() => void> = []
  let client: pg.Client | undefined
  let closed = false
  let attempt = 0
  let reconnectTimer: NodeJS.Timeout | undefined
  let connecting: Promise<void> | undefined
  let probing = false

  /** A query nobody answers within the timeout means the connection is gone, whatever TCP thinks. */
  function probe (): void {
    const current = client
    if (current === undefined || probing) return
    probing = true
    let timer: NodeJS.Timeout | undefined
    const timedOut = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => { reject(new Error(`the listening connection did not answer within ${LISTEN_PROBE_TIMEOUT_MS} ms`)) }, LISTEN_PROBE_TIMEOUT_MS)
    })
    Promise.race([current.query('select 1'), timedOut]).then(() => {}, (error: unknown) => {
      lost(current, error instanceof Error ? error : new Error(String(error)))
    }).finally(() => {
      clearTimeout(timer)
      probing = false
    })
  }
  const probeTimer = setInterval(probe, LISTEN_PROBE_EVERY_MS)
  probeTimer.unref()

  async function connect (): Promise<void> {
    // A connect attempt that hangs (an unreachable host) gives up like the pools' do, and the next starts.
    const next = new pg.Client({ connectionString, keepAlive: true, keepAliveInitialDelayMillis: LISTEN_PROBE_EVERY_MS, application_name: 'canvas-live-listener', connectionTimeoutMillis: CONNECT_TIMEOUT_MS })
    // Listeners go on before anything can fail: pg emits 'error' on the client whenever its
    // connection breaks, and an 'error' nobody hears ends the process. Until this client is the
    // current one, a break only fails this attempt.
    let broken: Error | undefined
    next.on('notification', (message) => {
      if (message.payload !== undefined) handlers.get(message.channel)?.(message.payload)
    })
    next.on('error', (error) => {
      if (next === client) lost(next, error)
      else broken ??= error
    })
    next.on('end', () => {
      if (next === client) lost(next, undefined)
      else broken ??= new Error('Connection terminated')
    })
    try {
      await next.connect()
      for (const channel of handlers.keys()) await next.query(`listen ${channel}`)
      if (broken !== undefined) throw broken
    } catch (error) {
      next.end().catch(() => {})
      throw error
    }
    if (closed) {
      await next.end().catch(() => {})
      return
    }
    client = next
    attempt = 0
  }

  /** One connect attempt at a time, whoever asks (the first listen, or a reconnect). */
  async function ensureConnected (): Promise<void> {
    connecting ??= connect().finally(() => { connecting = undefined })
    await connecting
  }

  function lost (which: pg.Client, error: Error | undefined): void {
    if (closed || which !== client) return
    client = undefined
    logThrottled(log, 'warn', 'live events: notification connection lost, reconnecting', { err: error })
    which.end().catch(() => {})
    scheduleReconnect()
  }

  function resumed (): void {
    log.info({}, 'live events: notification connection restored')
    for (const handler of resumeHandlers) {
      try {
        handler()
      } catch (error) {
        log.error({ err: error }, 'live events: a resume handler failed')
      }
    }
  }

  function scheduleReconnect (): void {
    if (closed || reconnectTimer !== undefined) return
    const delay = Math.min(RECONNECT_FIRST_MS * 2 ** attempt, RECONNECT_MAX_MS)
    attempt++
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined
      ensureConnected().then(() => {
        if (!closed) resumed()
      }, (error: unknown) => {
        // Every failed attempt of a long outage would be one line four times a second: log the first.
        if (attempt === 1) logThrottled(log, 'warn', 'live events: reconnect failed, retrying', { err: error })
        scheduleReconnect()
      })
    }, delay)
  }

  return {
    async listen (channel, handler) {
      checkChannel(channel)
      handlers.set(channel, handler)
      if (client === undefined) await ensureConnected()
      else await client.query(`listen ${channel}`)
    },
    onResume (handler) {
      resumeHandlers.push(handler)
    },
    async close () {
      closed = true
      clearInterval(probeTimer)
      if (reconnectTimer !== undefined) clearTimeout(reconnectTimer)
      const current = client
      client = undefined
      handlers.clear()
      if (current !== undefined) await current.end().catch(() => {})
    }
  }
}
