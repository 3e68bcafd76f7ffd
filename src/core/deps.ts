// What every core operation may use. Built once in app.ts and passed in: the core never imports a
// transport or reaches for globals.
import type { Config } from '../config.js'
import type { Db } from '../db/database.js'
import type { Clock } from '../infra/clock.js'
import type { Mailer } from '../infra/mail.js'
import type { EventBus } from './events.js'
import type { SessionSignals } from './auth/session-signals.js'
import type { CursorFeed } from './cursors/cursors.types.js'

export interface Logger {
  info (details: Record<string, unknown>, message: string): void
  warn (details: Record<string, unknown>, message: string): void
  error (details: Record<string, unknown>, message: string): void
}

export interface CoreDeps {
  readonly config: Config
  readonly db: Db
  readonly bus: EventBus
  readonly mailer: Mailer
  readonly clock: Clock
  readonly log: Logger
  /** Ends the event streams of a revoked session or deleted account on every instance. */
  readonly sessionSignals: SessionSignals
  /** Where cursor reports go (coalesced and relayed to every instance; never stored). */
  readonly cursorFeed: CursorFeed
}
