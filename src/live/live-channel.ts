// The one cross-instance channel of live updates: a Postgres LISTEN/NOTIFY channel that every
// instance (the publishing one included) listens on, so each message takes one path everywhere.
// A message is `<kind>:<body>`, kept far below NOTIFY's 8000-byte limit:
//   e:<log id>        an event was appended to the log (the event itself is loaded by id)
//   s:<session id>    a session ended (logout, revocation): its streams close
//   u:<user id>       an account was deleted: its streams close
//   p:<user id>       a user's profile changed: cached copies of the user row are forgotten
//   c:<json>          a batch of cursor moves, presence reports and leaves, or a starting instance's
//                     question and the others' answers (ephemeral, never in the log)
import type { Db } from '../db/database.js'
import type { NotificationListener } from '../infra/notification-listener.js'
import type { Logger } from '../infra/logger.js'
import { notify } from './event-log.repository.js'

export const LIVE_CHANNEL = 'canvas_live'

/** NOTIFY payloads must stay under 8000 bytes; senders split anything bigger. */
export const MAX_NOTIFY_BYTES = 7_000

export type LiveKind = 'e' | 's' | 'u' | 'p' | 'c'

export interface LiveChannel {
  readonly name: string
  send (kind: Exclude<LiveKind, 'e'>, body: string): Promise<void>
  on (kind: LiveKind, handler: (body: string) => void): void
  /** After the listening connection came back: messages sent meanwhile were not heard. */
  onResume (handler: () => void): void
  start (): Promise<void>
  close (): Promise<void>
}

export function createLiveChannel (db: Db, listener: NotificationListener, log: Logger): LiveChannel {
  const handlers = new Map<string, Array<(body: string) => void>>()

  function dispatch (payload: string): void {
    const kind = payload.slice(0, 1)
    if (payload[1] !== ':') return
    for (const handler of handlers.get(kind) ?? []) {
      try {
        handler(payload.slice(2))
      } catch (error) {
        log.error({ err: error, kind }, 'live channel handler failed')
      }
    }
  }

  return {
    name: LIVE_CHANNEL,
    async send (kind, body) {
      await notify(db, LIVE_CHANNEL, `${kind}:${body}`)
    },
    on (kind, handler) {
      handlers.set(kind, [...handlers.get(kind) ?? [], handler])
    },
    onResume (handler) {
      listener.onResume(handler)
    },
    async start () {
      await listener.listen(LIVE_CHANNEL, dispatch)
    },
    async close () {
      await listener.close()
    }
  }
}
