// Session signals over the live channel (`s:<session id>`, `u:<user id>`, `p:<user id>`): heard by
// every instance.
import type { SessionSignals } from '../core/auth/session-signals.js'
import type { Logger } from '../infra/logger.js'
import type { LiveChannel } from './live-channel.js'
import { logThrottled } from '../infra/throttled-log.js'

export function sessionSignalsOver (channel: LiveChannel, log: Logger): SessionSignals {
  async function send (kind: 's' | 'u' | 'p', id: string): Promise<void> {
    try {
      await channel.send(kind, id)
    } catch (error) {
      // The change itself is committed; the heartbeat's session check ends the streams a little later.
      logThrottled(log, 'warn', 'live events: session signal could not be sent', { err: error, kind })
    }
  }
  return {
    sessionEnded: async (sessionId) => { await send('s', sessionId) },
    accountDeleted: async (userId) => { await send('u', userId) },
    userChanged: async (userId) => { await send('p', userId) },
    listen: (handlers) => {
      channel.on('s', handlers.sessionEnded)
      channel.on('u', handlers.accountDeleted)
      channel.on('p', handlers.userChanged)
      channel.onResume(handlers.lostTrack)
    }
  }
}
