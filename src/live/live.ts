// Assembles the live-update machinery of one instance: the LISTEN/NOTIFY channel, the event-log bus,
// cursor and canvas presence, session signals, stream caps, and (once the core exists) the stream hub.
import type { Db } from '../db/database.js'
import type { Clock } from '../infra/clock.js'
import type { LiveConnections } from './live-connections.js'
import type { SlotStore } from '../infra/stream-slots.js'
import type { AudienceResolver } from '../core/audience.js'
import type { PresenceDirectory } from '../core/presence/presence-directory.js'
import type { PresenceBoard } from '../core/presence/presence.types.js'
import type { SessionSignals } from '../core/auth/session-signals.js'
import { createCursorPresence } from './cursor-presence.js'
import type { CursorFeed } from '../core/cursors/cursors.types.js'
import type { Logger } from '../infra/logger.js'
import { createEventLogBus, type EventLogBus } from './event-log-bus.js'
import { createLiveChannel } from './live-channel.js'
import { sessionSignalsOver } from './session-signal-channel.js'
import { createStreamCaps, type StreamCaps } from './stream-caps.js'
import { createStreamHub, type StreamHub } from './stream-hub.js'

export interface Live {
  readonly bus: EventLogBus
  /** Reads on the delivery path go here (its own pool on Postgres). */
  readonly readDb: Db
  readonly sessionSignals: SessionSignals
  readonly cursorFeed: CursorFeed
  /** Who is present where: this instance's copy of what every instance relays. */
  readonly presenceBoard: PresenceBoard
  readonly caps: StreamCaps
  /** Builds this instance's stream hub; the audience resolver and who presence shows come from the core. */
  streams (audience: AudienceResolver, people: PresenceDirectory): StreamHub
  close (): Promise<void>
}

export interface LiveOptions {
  /** Appends and notifications. */
  db: Db
  connections: LiveConnections
  slots: SlotStore
  clock: Clock
  log: Logger
  heartbeatMs: number
  /** A stream's client that takes nothing this long while 1 MiB waits for it is cut off. */
  stallMs: number
}

/** Resolves once this instance listens: every event committed from then on reaches it. */
export async function startLive (options: LiveOptions): Promise<Live> {
  const { db, connections, slots, clock, log, heartbeatMs, stallMs } = options
  const { readDb } = connections
  const channel = createLiveChannel(db, connections.listener, log)
  const bus = createEventLogBus({ db, readDb, channel, clock, log })
  const presence = createCursorPresence({
    send: async (body) => { await channel.send('c', body) },
    listen: (handler) => { channel.on('c', handler) }
  }, log)
  const caps = createStreamCaps(slots, heartbeatMs)
  await channel.start()
  // Listening now: the other instances' answers reach this one. After a lost connection they are
  // asked again, for what was relayed meanwhile.
  presence.resync()
  channel.onResume(() => { presence.resync() })
  await bus.start()
  let hub: StreamHub | undefined

  return {
    bus,
    readDb,
    sessionSignals: sessionSignalsOver(channel, log),
    cursorFeed: presence,
    presenceBoard: presence,
    caps,
    streams (audience, people) {
      hub ??= createStreamHub({ db: readDb, bus, channel, audience, presence, people, caps, clock, log, heartbeatMs, stallMs, catchUpReads: connections.catchUpReads })
      return hub
    },
    async close () {
      hub?.closeAll()
      hub?.stop()
      presence.stop()
      bus.stop()
      await channel.close()
      await connections.close()
    }
  }
}
