// What every core operation may use. Built once in app.ts and passed in: the core never imports a
// transport or reaches for globals.
import type { Config } from '../config.js'
import type { Db } from '../db/database.js'
import type { Clock } from '../infra/clock.js'
import type { JwksCache } from '../infra/jwks-cache.js'
import type { Logger } from '../infra/logger.js'
import type { Mailer } from '../infra/mail.js'
import type { Storage } from '../infra/storage.js'
import type { EventNotifier } from './events.js'
import type { SessionSignals } from './auth/session-signals.js'
import type { CursorFeed } from './cursors/cursors.types.js'
import type { PresenceBoard } from './presence/presence.types.js'
import type { TilePosition } from './canvas/canvas.types.js'
import type { LayoutAlgorithm } from './canvas/layout.js'
import type { CvParseResult } from './passport/cv.types.js'
import type { Classification } from './safety/safety.types.js'

/**
 * CPU-heavy work, run off the event loop (src/compute: a worker pool) so one caller's task never
 * stalls everyone's requests. Every method may fail with `unavailable` (Retry-After) when its queue
 * is full or its time limit passes; a task that crashes its worker is an internal error.
 */
export interface Compute {
  /** What `computeLayout` in canvas/layout.ts returns for these ids, computed elsewhere. */
  layout (algorithm: LayoutAlgorithm, tileIds: readonly string[]): Promise<TilePosition[]>
  /** What `parseCv` in passport/cv-parse.ts returns for these bytes, parsed where its whole memory
   *  is capped (DECISIONS §17); a file past the parse's time or memory limit is a refusal
   *  (`too-complex`), not an error. */
  parseCv (bytes: Uint8Array): Promise<CvParseResult>
  /** What `classifyText` in safety/classify.ts returns for this text. */
  classify (text: string): Promise<Classification>
}

export interface CoreDeps {
  readonly config: Config
  readonly db: Db
  /** Woken after a transaction that published events commits (src/core/transaction.ts). */
  readonly events: EventNotifier
  readonly mailer: Mailer
  readonly clock: Clock
  readonly log: Logger
  /** Ends the event streams of a revoked session or deleted account on every instance. */
  readonly sessionSignals: SessionSignals
  /** Where cursor reports go (coalesced and relayed to every instance; never stored). */
  readonly cursorFeed: CursorFeed
  /** Who is present on which room's canvas (held in memory by every instance, shared as cursors are). */
  readonly presenceBoard: PresenceBoard
  readonly compute: Compute
  /** Uploaded files' bytes (local disk or an S3-compatible bucket). */
  readonly storage: Storage
  /** The admin identity provider's signing keys; undefined where OIDC is not configured (admin: 503). */
  readonly adminKeys: JwksCache | undefined
}
