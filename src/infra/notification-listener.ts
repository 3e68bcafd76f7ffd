// The LISTEN side of Postgres notifications, for the live event channel (src/core/live).
// Embedded: PGlite delivers notifications in-process, on commit, to every callback registered on
// the instance (two apps sharing one PGlite both hear everything). Postgres: one dedicated
// `pg.Client` (a pooled client would lose its LISTEN when returned to the pool), reconnected with
// backoff; after a reconnect `onResume` handlers run so callers can catch up on what the gap hid.
import type { PGlite } from '@electric-sql/pglite'
import pg from 'pg'
import type { Logger } from '../core/deps.js'

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

/** Postgres: a dedicated connection that is re-established (with backoff up to 5 s) whenever it drops. */
export function postgresListener (connectionString: string, log: Logger): NotificationListener {
  const handlers = new Map<string, NotificationHandler>()
  const resumeHandlers: Array<() => void> = []
  let client: pg.Client | undefined
  let closed = false
  let attempt = 0
  let reconnectTimer: NodeJS.Timeout | undefined
  let connecting: Promise<void> | undefined

  async function connect (): Promise<void> {
    const next = new pg.Client({ connectionString, keepAlive: true, application_name: 'canvas-live-listener' })
    next.on('notification', (message) => {
      if (message.payload !== undefined) handlers.get(message.channel)?.(message.payload)
    })
    next.on('error', (error) => { lost(next, error) })
    next.on('end', () => { lost(next, undefined) })
    await next.connect()
    for (const channel of handlers.keys()) await next.query(`listen ${channel}`)
    if (closed) {
      await next.end().catch(() => {})
      return
    }
    client = next
    attempt = 0
  }

  function lost (which: pg.Client, error: Error | undefined): void {
    if (closed || which !== client) return
    client = undefined
    log.warn({ err: error }, 'live events: notification connection lost, reconnecting')
    which.end().catch(() => {})
    scheduleReconnect()
  }

  function scheduleReconnect (): void {
    if (closed || reconnectTimer !== undefined) return
    const delay = Math.min(100 * 2 ** attempt, 5_000)
    attempt++
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined
      connect().then(() => {
        if (closed) return
        log.info({}, 'live events: notification connection restored')
        for (const handler of resumeHandlers) handler()
      }, (error: unknown) => {
        log.warn({ err: error }, 'live events: reconnect failed')
        scheduleReconnect()
      })
    }, delay)
  }

  return {
    async listen (channel, handler) {
      checkChannel(channel)
      handlers.set(channel, handler)
      if (client === undefined) {
        connecting ??= connect().finally(() => { connecting = undefined })
        await connecting
      } else {
        await client.query(`listen ${channel}`)
      }
    },
    onResume (handler) {
      resumeHandlers.push(handler)
    },
    async close () {
      closed = true
      if (reconnectTimer !== undefined) clearTimeout(reconnectTimer)
      const current = client
      client = undefined
      handlers.clear()
      if (current !== undefined) await current.end().catch(() => {})
    }
  }
}
