// The typed event map (SPEC Events). Operations publish an event in the transaction of the change it
// describes (src/core/transaction.ts): the event is in the log exactly when the change commits, and
// delivery (src/live) reads the log. Who may receive an event is stated by its audience, and the
// core decides what an audience means (room membership and visibility), never the stream code.
import type { LayoutValidation, PositionResult, TileState, CursorPosition } from './canvas/canvas.types.js'
import type { Office, OfficeRole } from './offices/offices.types.js'
import type { PresentUser } from './presence/presence.types.js'
import type { Room } from './rooms/rooms.types.js'
import type { Spark } from './sparks/sparks.types.js'
import type { LinkPlace } from './shelves/shelves.js'
import type { Link, Shelf, ShelfSummary } from './shelves/shelves.types.js'
import type { Message, WidgetInstallation } from './safety/safety.types.js'

/**
 * Event type → payload, as SPEC's event table. A payload that describes a row's new state carries that
 * row's `version` (a spark, and each tile of a batch or layout; on a list payload, each item): events
 * arrive in the order their transactions began, not committed, so clients keep the highest (README).
 */
export interface EventMap {
  'room:created': Room
  'room:updated': Room
  'room:deleted': { id: string }
  'spark:created': Spark
  'spark:updated': Spark
  /** `version`: the spark's last; a state of it with a version not above is older than the deletion. */
  'spark:deleted': { id: string, roomId: string, version: number }
  'position:updated': PositionResult
  'positions:batch-updated': { updates: TileState[] }
  'layout:computed': { roomId: string, positions: TileState[] }
  /** At most 100 issues, with `issueCount` and `truncated` (DECISIONS §17). */
  'layout:validated': LayoutValidation
  'cursor:moved': CursorPosition
  'cursor:left': { userId: string, roomId: string }
  'cursors:batch-updated': { cursors: CursorPosition[] }
  /** Ephemeral like cursors (never in the log): to the room's members but the user (DECISIONS §17). */
  'presence:joined': { roomId: string, user: PresentUser }
  /** Sent exactly when `cursor:left` is: on leave, the user's last stream closing, 10 minutes idle. */
  'presence:left': { roomId: string, userId: string }
  'office:created': Office
  'office:updated': Office
  'office:deleted': { id: string }
  'office:member-joined': { officeId: string, userId: string, role: OfficeRole }
  'office:member-left': { officeId: string, userId: string }
  'shelf:created': Shelf
  /** The shelf's own fields (never its links: src/core/shelves/shelves.ts); a move adds `moved`. */
  'shelf:updated': ShelfSummary & { moved?: LinkPlace[] }
  'shelf:deleted': { id: string }
  'shelf:link-added': { shelfId: string, link: Link }
  'shelf:link-removed': { shelfId: string, linkId: string }
  /** To the user whose inbox received it (DECISIONS §11). */
  'message:created': Message
  /** To the room's members (DECISIONS §11). */
  'widget:installed': WidgetInstallation
  'widget:updated': WidgetInstallation
  'widget:removed': { id: string, roomId: string, widgetId: string }
}

export type EventType = keyof EventMap

/**
 * Who may receive an event.
 * - room: the room's members who may still see the room at delivery time (DECISIONS §5, §7) and,
 *   with `sparkId`, that spark (a hidden spark's events reach its creator alone, DECISIONS §11);
 * - office: the office's members at delivery time;
 * - users: exactly these users (e.g. `room:deleted` goes to those who were members when it was deleted).
 */
export type Audience =
  | { kind: 'room', roomId: string, sparkId?: string }
  | { kind: 'office', officeId: string }
  | { kind: 'users', userIds: readonly string[] }

export interface DomainEvent<K extends EventType = EventType> {
  readonly type: K
  readonly payload: EventMap[K]
  /** ISO 8601 server time of publication. */
  readonly timestamp: string
  /** The user who caused the event, when one did. */
  readonly userId?: string
  readonly audience: Audience
}

export type AnyEvent = { [K in EventType]: DomainEvent<K> }[EventType]

export type EventListener = (event: AnyEvent) => void

export interface PublishOptions {
  audience: Audience
  /** The user who caused the event. */
  userId?: string
}

/** Publishes an event as part of the current transaction (see src/core/transaction.ts). */
export type Publish = <K extends EventType>(type: K, payload: EventMap[K], options: PublishOptions) => void

/** Told after a transaction that wrote events has committed, so delivery picks them up at once
 *  (on every instance). A hint: delivery also finds them without it, a moment later. */
export interface EventNotifier {
  committed (): void
}
