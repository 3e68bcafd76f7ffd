// Kysely table types: the one source of truth for row shapes. Each migration that adds or changes
// a table updates the matching interface here.
import type { ColumnType, Generated } from 'kysely'

/** timestamptz(3): read as Date, written as Date. */
type Timestamp = ColumnType<Date, Date, Date>
type CreatedAt = ColumnType<Date, Date | undefined, never>

export interface UsersTable {
  id: string
  email: string
  display_name: string
  /** The display name's search key (src/core/users/search-key.ts), written with every name. */
  search_key: string
  avatar_url: string | null
  /** What the user's uploads weigh in bytes (bigint: read back as a string by pg), kept by the
   *  transactions that add and remove uploads; UPLOAD_QUOTA_BYTES bounds it. */
  upload_bytes: ColumnType<string, never, string>
  created_at: CreatedAt
  updated_at: Timestamp
  /** Set by a `suspend` moderation action (DECISIONS §11); null while the account is in good standing. */
  suspended_at: ColumnType<Date | null, Date | null | undefined, Date | null>
  /** Set when the account's deletion began and renewed after each of its batches
   *  (src/core/users/account-deletion.ts); the account can no longer sign in. Null otherwise. */
  deleting_at: ColumnType<Date | null, Date | null | undefined, Date | null>
}

export type SessionKind = 'cookie' | 'rpc'

export interface SessionsTable {
  id: string
  user_id: string
  kind: SessionKind
  created_at: CreatedAt
  expires_at: Timestamp
  revoked_at: Timestamp | null
}

/** Refresh tokens of RPC sessions; a used one presented again revokes its session (reuse detection). */
export interface RefreshTokensTable {
  token_hash: string
  session_id: string
  expires_at: Timestamp
  used_at: Timestamp | null
}

/** A magic link, stored only as hashes; it completes a poll when it was requested over RPC. */
export interface LoginLinksTable {
  token_hash: string
  poll_hash: string | null
  email: string
  created_at: CreatedAt
  expires_at: Timestamp
  used_at: Timestamp | null
  user_id: string | null
  poll_delivered_at: Timestamp | null
}

export interface DeletionTokensTable {
  token_hash: string
  user_id: string
  expires_at: Timestamp
  used_at: Timestamp | null
}

export interface RoomsTable {
  id: string
  name: string
  description: string | null
  is_public: boolean
  created_by: string
  created_at: CreatedAt
  updated_at: Timestamp
  /** Set by a `hide` moderation action (DECISIONS §11): the item then exists only for its owner. */
  hidden_at: ColumnType<Date | null, Date | null | undefined, Date | null>
}

/** A content tile; (x, y) is its top-left corner. `version` counts changes (optimistic concurrency). */
export interface SparksTable {
  id: string
  room_id: string
  title: string
  content: string
  x: number
  y: number
  created_by: string
  created_at: CreatedAt
  updated_at: Timestamp
  version: ColumnType<number, number | undefined, number>
  /** Set by a `hide` moderation action (DECISIONS §11): the item then exists only for its owner. */
  hidden_at: ColumnType<Date | null, Date | null | undefined, Date | null>
}

/** Who is in a room (DECISIONS §5): its creator, and signed-in users who opened or wrote in it while public. */
export interface RoomMembersTable {
  room_id: string
  user_id: string
  joined_at: ColumnType<Date, Date | undefined, never>
}

/** The durable event log of the live stream (a transactional outbox). Delivery order is (tx, id):
 *  `tx` is the writing transaction (xid8), `id` the order within it; both bigints read as strings. */
export interface EventLogTable {
  id: ColumnType<string, never, never>
  tx: ColumnType<string, never, never>
  type: string
  /** jsonb: written as JSON text, read parsed. */
  payload: ColumnType<unknown, string, never>
  audience: ColumnType<unknown, string, never>
  user_id: string | null
  created_at: CreatedAt
}

/** One row: every event at or before the position (pruned_tx, pruned_through) is gone from the log. */
export interface EventLogHorizonTable {
  singleton: ColumnType<boolean, never, never>
  pruned_tx: ColumnType<string, never, string>
  pruned_through: ColumnType<string, never, string>
}

export type OfficeRole = 'owner' | 'admin' | 'member'

export interface OfficesTable {
  id: string
  name: string
  /** Lower-case letters, digits and hyphens; unique. */
  slug: string
  description: string
  is_public: boolean
  created_by: string
  created_at: CreatedAt
  updated_at: Timestamp
}

export interface OfficeMembersTable {
  office_id: string
  user_id: string
  role: OfficeRole
  joined_at: ColumnType<Date, Date | undefined, never>
}

/** An invitation by e-mail; only its token's hash is stored. Pending while `accepted_at` is null and it has not expired. */
export interface OfficeInvitesTable {
  id: string
  office_id: string
  email: string
  role: OfficeRole
  token_hash: string
  invited_by: string
  created_at: CreatedAt
  expires_at: Timestamp
  accepted_at: Timestamp | null
}

/** One invitation mailed (DECISIONS §16: at most 3 a day per address per office); kept a day. */
export interface OfficeInviteSendsTable {
  office_id: string
  email: string
  sent_at: Timestamp
}

/** When a periodic job shared by every instance last started (one instance runs it per period). */
export interface MaintenanceRunsTable {
  job: string
  started_at: Timestamp
}

export type UploadKind = 'avatar' | 'attachment'

/** An uploaded file (DECISIONS §9); its bytes are in storage under `storage_key` (src/infra/storage.ts). */
export interface UploadsTable {
  id: string
  owner_id: string
  kind: UploadKind
  /** The client's name for it, sanitised: no path, no control characters, at most 255 characters. */
  filename: string
  /** Bytes. */
  size: number
  /** As sniffed from the bytes, never as the client claimed (src/core/uploads/sniff.ts). */
  mime_type: string
  storage_key: string
  created_at: CreatedAt
}

/** A numeric video/voice uid held in a channel until its newest token expires (DECISIONS §16). */
export interface RtcUidClaimsTable {
  channel_name: string
  /** bigint: read back as a string by pg. */
  uid: ColumnType<string, number, number>
  user_id: string
  expires_at: Timestamp
}

/** A user's list of links (DECISIONS §10). `version` counts changes to the shelf's own fields. */
export interface ShelvesTable {
  id: string
  owner_id: string
  name: string
  description: string
  is_public: boolean
  version: ColumnType<number, number | undefined, number>
  created_at: CreatedAt
  updated_at: Timestamp
  /** Set by a `hide` moderation action (DECISIONS §11): the item then exists only for its owner. */
  hidden_at: ColumnType<Date | null, Date | null | undefined, Date | null>
}

/** A link on a shelf; `position` is its fractional ordering key (compared bytewise, "C" collation). */
export interface ShelfLinksTable {
  id: string
  shelf_id: string
  url: string
  title: string
  position: string
  version: ColumnType<number, number | undefined, number>
  created_at: CreatedAt
  updated_at: Timestamp
}

/** A user's professional profile (DECISIONS §10); a user without a row has an empty, private one. */
export interface PassportsTable {
  user_id: string
  headline: string
  summary: string
  location: string
  is_public: boolean
  updated_at: Timestamp
}

export interface PassportSkillsTable {
  id: string
  user_id: string
  name: string
  /** `name` folded for the case-insensitive uniqueness (src/core/passport/passport.types.ts). */
  name_key: string
  level: number | null
  created_at: CreatedAt
}

export interface PassportExperienceTable {
  id: string
  user_id: string
  title: string
  company: string
  /** YYYY-MM */
  start_date: string
  end_date: string | null
  description: string
  created_at: CreatedAt
}

/** Written once, never updated: Kysely refuses an `updateTable` that sets it. */
type AppendOnly<T> = ColumnType<T, T, never>

/** The administration audit log (DECISIONS §12): append-only, and the database refuses UPDATE and DELETE. */
export interface AdminAuditLogTable {
  id: AppendOnly<string>
  seq: ColumnType<string, never, never>
  at: AppendOnly<Date>
  actor_sub: AppendOnly<string>
  actor_email: AppendOnly<string | null>
  action: AppendOnly<string>
  target_type: AppendOnly<string | null>
  target_id: AppendOnly<string | null>
  outcome: AppendOnly<'permitted' | 'denied'>
  /** jsonb: written as its JSON text, read as the object. */
  details: ColumnType<Record<string, unknown>, string, never>
  request_id: AppendOnly<string>
  client_ip: AppendOnly<string>
}

/** Idempotency-Key (issue 33): the first answer to a create per user and key; `status` null while in flight. */
export interface IdempotencyKeysTable {
  /** The key's owner: a user's id, or `admin:<sub>` for an administrator. */
  user_id: string
  idem_key: string
  /** sha256 of the transport's route or method and the whole request; '' until the first run's body arrived. */
  fingerprint: string
  /** The owner's account (null for an administrator): deleting it deletes its keys. */
  account_id: string | null
  /** What the first run returned (`{ value }` or `{ error }`); null while it runs. */
  outcome: ColumnType<StoredOutcome | null, string | null, string | null>
  created_at: Timestamp
  expires_at: Timestamp
}

/** An operation's result, or the refusal it ended with, as kept for a retry (src/core/idempotency). */
export type StoredOutcome =
  | { value: unknown }
  | { error: { kind: string, message: string, violations: Array<{ field: string, description: string }>, retryAfter?: number, tooLarge?: boolean } }

export type ReportTargetType = 'room' | 'spark' | 'user' | 'shelf' | 'office'
export type ReportReason = 'spam' | 'abuse' | 'harassment' | 'illegal' | 'other'
export type ReportStatus = 'open' | 'actioned' | 'dismissed'
export type ModerationActionKind = 'hide' | 'suspend' | 'warn'
export type AppealStatus = 'pending' | 'upheld' | 'overturned'
export type MotdSeverity = 'info' | 'warning' | 'critical'

/** A user's report on a room, spark, shelf, office or user (DECISIONS §11); one open per reporter and target. */
export interface ReportsTable {
  id: string
  reporter_id: string
  target_type: ReportTargetType
  target_id: string
  reason: ReportReason
  details: string | null
  /** jsonb `[{ label, score }]`: the local classifier's labels, written as JSON text. */
  labels: ColumnType<unknown, string | undefined, string>
  status: ColumnType<ReportStatus, ReportStatus | undefined, ReportStatus>
  /** What became of it: the action's kind, or `dismissed`. */
  outcome: string | null
  created_at: CreatedAt
  resolved_at: Timestamp | null
  /** The admin's token subject. */
  resolved_by: string | null
}

/** A `hide`, `suspend` or `warn` taken by an admin; `reversed_at` when an appeal or super admin undid it. */
export interface ModerationActionsTable {
  id: string
  kind: ModerationActionKind
  target_type: ReportTargetType
  target_id: string
  /** The affected user: the hidden item's owner, or the suspended or warned user. */
  user_id: string
  report_id: string | null
  note: string | null
  taken_by: string
  created_at: CreatedAt
  reversed_at: Timestamp | null
}

export interface AppealsTable {
  id: string
  action_id: string
  user_id: string
  text: string
  status: ColumnType<AppealStatus, AppealStatus | undefined, AppealStatus>
  note: string | null
  created_at: CreatedAt
  decided_at: Timestamp | null
  decided_by: string | null
}

/** A user's inbox of service notices (DECISIONS §11). */
export interface MessagesTable {
  id: string
  user_id: string
  kind: string
  title: string
  body: string
  action_id: string | null
  /** Where to act on the message (an invitation's accept page); never a secret. */
  link: string | null
  created_at: CreatedAt
  read_at: Timestamp | null
}

/** A message of the day, shown while starts_at <= now < ends_at. */
export interface MotdTable {
  id: string
  text: string
  severity: MotdSeverity
  starts_at: Timestamp
  ends_at: Timestamp
  created_at: CreatedAt
  updated_at: Timestamp
}

/** The widget catalogue: each widget's settings are checked against its JSON Schema. */
export interface WidgetsTable {
  id: string
  name: string
  description: string
  /** jsonb, written as JSON text. */
  settings_schema: ColumnType<unknown, string, string>
  created_at: CreatedAt
  updated_at: Timestamp
}

export interface RoomWidgetsTable {
  id: string
  room_id: string
  widget_id: string
  /** jsonb, written as JSON text. */
  settings: ColumnType<unknown, string, string>
  installed_by: string
  version: ColumnType<number, number | undefined, number>
  created_at: CreatedAt
  updated_at: Timestamp
}

export interface Database {
  users: UsersTable
  sessions: SessionsTable
  refresh_tokens: RefreshTokensTable
  login_links: LoginLinksTable
  deletion_tokens: DeletionTokensTable
  rooms: RoomsTable
  sparks: SparksTable
  room_members: RoomMembersTable
  event_log: EventLogTable
  event_log_horizon: EventLogHorizonTable
  offices: OfficesTable
  office_members: OfficeMembersTable
  office_invites: OfficeInvitesTable
  office_invite_sends: OfficeInviteSendsTable
  maintenance_runs: MaintenanceRunsTable
  uploads: UploadsTable
  rtc_uid_claims: RtcUidClaimsTable
  shelves: ShelvesTable
  shelf_links: ShelfLinksTable
  passports: PassportsTable
  passport_skills: PassportSkillsTable
  passport_experience: PassportExperienceTable
  admin_audit_log: AdminAuditLogTable
  idempotency_keys: IdempotencyKeysTable
  reports: ReportsTable
  moderation_actions: ModerationActionsTable
  appeals: AppealsTable
  messages: MessagesTable
  motd: MotdTable
  widgets: WidgetsTable
  room_widgets: RoomWidgetsTable
}

export type { Generated }
