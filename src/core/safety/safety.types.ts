// Trust and safety records as the REST API returns them (DECISIONS §11, §12), and the input schemas
// of their operations, shared by REST (route schemas) and the core (validation).
import type { Selectable } from 'kysely'
import { Type } from 'typebox'
import type {
  AppealsTable, AppealStatus, MessagesTable, ModerationActionKind, ModerationActionsTable, MotdSeverity, MotdTable,
  ReportReason, ReportsTable, ReportStatus, ReportTargetType, RoomWidgetsTable, WidgetsTable
} from '../../db/schema.js'
import { MAX_JSON_DEPTH } from '../json-depth.js'
import { PageFields } from '../pagination.js'

export type { AppealStatus, ModerationActionKind, MotdSeverity, ReportReason, ReportStatus, ReportTargetType }

export const REPORT_DETAILS_MAX = 1000
export const APPEAL_TEXT_MAX = 2000
export const MOTD_TEXT_MAX = 500
export const NOTE_MAX = 1000
export const CLASSIFY_TEXT_MAX = 10_000
export const WIDGET_NAME_MAX = 100
export const WIDGET_DESCRIPTION_MAX = 1000
/** A widget's JSON Schema, and an installation's settings, as JSON text. */
export const WIDGET_JSON_MAX_BYTES = 16_384
/** An action may be appealed within this many days of being taken (DECISIONS §11). */
export const APPEAL_WINDOW_DAYS = 30

export interface ClassifierLabel { label: string, score: number }

/** A report as its reporter sees it; the reporter is never shown to anyone else. */
export interface Report {
  id: string
  targetType: ReportTargetType
  targetId: string
  reason: ReportReason
  details: string | null
  status: ReportStatus
  createdAt: string
  resolvedAt?: string
  outcome?: string
}

/** A report as admins see it: with its reporter, triage labels and who resolved it. */
export interface AdminReport extends Report {
  reporterId: string
  labels: ClassifierLabel[]
  resolvedBy: string | null
}

export interface ModerationAction {
  id: string
  kind: ModerationActionKind
  targetType: ReportTargetType
  targetId: string
  /** The affected user: the hidden item's owner, or the suspended or warned user. */
  userId: string
  reportId: string | null
  note: string | null
  takenBy: string
  createdAt: string
  reversedAt: string | null
}

export interface Appeal {
  id: string
  actionId: string
  text: string
  status: AppealStatus
  createdAt: string
  decidedAt?: string
}

export interface Message {
  id: string
  kind: string
  title: string
  body: string
  createdAt: string
  readAt: string | null
  actionId?: string
  /** Where to act on it: an office invitation's accept page (`…/invites/accept?inviteId=…`). */
  link?: string
}

export interface Motd {
  id: string
  text: string
  severity: MotdSeverity
  startsAt: string
  endsAt: string
}

export interface Widget {
  id: string
  name: string
  description: string
  settingsSchema: Record<string, unknown>
}

export interface WidgetInstallation {
  id: string
  roomId: string
  widgetId: string
  settings: Record<string, unknown>
  installedBy: string
  version: number
  createdAt: string
  updatedAt: string
}

export interface Classification {
  labels: ClassifierLabel[]
  flagged: boolean
  model: string
}

const Id = (what: string) => Type.String({ minLength: 1, maxLength: 200, errorMessage: `must be a non-empty ${what} id` })
const oneOf = <T extends string>(values: readonly T[]) => Type.Union(values.map((v) => Type.Literal(v)), { errorMessage: `must be one of ${values.join(', ')}` })

export const REPORT_TARGET_TYPES = ['room', 'spark', 'user', 'shelf', 'office'] as const
export const REPORT_REASONS = ['spam', 'abuse', 'harassment', 'illegal', 'other'] as const
export const REPORT_STATUSES = ['open', 'actioned', 'dismissed'] as const
export const RESOLUTIONS = ['dismiss', 'hide', 'suspend', 'warn'] as const
export type Resolution = typeof RESOLUTIONS[number]
export const APPEAL_DECISIONS = ['upheld', 'overturned'] as const
export const MOTD_SEVERITIES = ['info', 'warning', 'critical'] as const

const Note = Type.String({ maxLength: NOTE_MAX, errorMessage: `must be a string of at most ${NOTE_MAX} characters` })

export const CreateReportInput = Type.Object({
  targetType: oneOf(REPORT_TARGET_TYPES),
  targetId: Id('target'),
  reason: oneOf(REPORT_REASONS),
  details: Type.Optional(Type.String({ maxLength: REPORT_DETAILS_MAX, errorMessage: `must be a string of at most ${REPORT_DETAILS_MAX} characters` }))
}, { additionalProperties: false })

export const OwnListQuery = Type.Object({ ...PageFields })

export const CreateAppealInput = Type.Object({
  actionId: Id('action'),
  text: Type.String({ minLength: 1, maxLength: APPEAL_TEXT_MAX, pattern: '\\S', errorMessage: `must be a string of 1 to ${APPEAL_TEXT_MAX} characters, not only spaces` })
}, { additionalProperties: false })

export const MessageIdParams = Type.Object({ messageId: Id('message') })

export const ClassifyInput = Type.Object({
  text: Type.String({ maxLength: CLASSIFY_TEXT_MAX, errorMessage: `must be a string of at most ${CLASSIFY_TEXT_MAX} characters` })
}, { additionalProperties: false })

// Free-form JSON (DECISIONS §17): `maxDepth` is checked by src/core/validation.ts before anything walks it.
const Settings = Type.Record(Type.String(), Type.Unknown(), { errorMessage: 'must be an object', maxDepth: MAX_JSON_DEPTH })

export const WidgetRoomParams = Type.Object({ roomId: Id('room') })
export const InstallationParams = Type.Object({ roomId: Id('room'), installationId: Id('installation') })
export const InstallWidgetBody = Type.Object({ widgetId: Id('widget'), settings: Type.Optional(Settings) }, { additionalProperties: false })
export const InstallWidgetInput = Type.Object({ roomId: Id('room'), ...InstallWidgetBody.properties }, { additionalProperties: false })
export const UpdateInstallationBody = Type.Object({ settings: Settings }, { additionalProperties: false })
export const UpdateInstallationInput = Type.Object({ roomId: Id('room'), installationId: Id('installation'), ...UpdateInstallationBody.properties }, { additionalProperties: false })

// Admin inputs (DECISIONS §12): validated by the core operations in src/core/moderation/.
export const AdminReportsQuery = Type.Object({ status: Type.Optional(oneOf(REPORT_STATUSES)), ...PageFields })
export const ResolveReportInput = Type.Object({ action: oneOf(RESOLUTIONS), note: Type.Optional(Note) }, { additionalProperties: false })
export const TakeActionInput = Type.Object({
  kind: oneOf(['hide', 'suspend', 'warn'] as const),
  targetType: oneOf(REPORT_TARGET_TYPES),
  targetId: Id('target'),
  note: Type.Optional(Note)
}, { additionalProperties: false })
export const DecideAppealInput = Type.Object({ decision: oneOf(APPEAL_DECISIONS), note: Type.Optional(Note) }, { additionalProperties: false })
export const LiftSuspensionInput = Type.Object({ note: Type.Optional(Note) }, { additionalProperties: false })

const DateTime = Type.String({ maxLength: 40, format: 'date-time', errorMessage: 'must be an ISO 8601 date-time, e.g. 2026-11-28T10:00:00Z' })
const MotdText = Type.String({ minLength: 1, maxLength: MOTD_TEXT_MAX, pattern: '\\S', errorMessage: `must be a string of 1 to ${MOTD_TEXT_MAX} characters, not only spaces` })
export const CreateMotdInput = Type.Object({ text: MotdText, severity: oneOf(MOTD_SEVERITIES), startsAt: DateTime, endsAt: DateTime }, { additionalProperties: false })
export const UpdateMotdInput = Type.Object({
  text: Type.Optional(MotdText),
  severity: Type.Optional(oneOf(MOTD_SEVERITIES)),
  startsAt: Type.Optional(DateTime),
  endsAt: Type.Optional(DateTime)
}, { additionalProperties: false })

const WidgetName = Type.String({ minLength: 1, maxLength: WIDGET_NAME_MAX, pattern: '\\S', errorMessage: `must be a string of 1 to ${WIDGET_NAME_MAX} characters, not only spaces` })
const WidgetDescription = Type.String({ maxLength: WIDGET_DESCRIPTION_MAX, errorMessage: `must be a string of at most ${WIDGET_DESCRIPTION_MAX} characters` })
const SettingsSchema = Type.Record(Type.String(), Type.Unknown(), { errorMessage: 'must be a JSON Schema object', maxDepth: MAX_JSON_DEPTH })
export const CreateWidgetInput = Type.Object({ name: WidgetName, description: Type.Optional(WidgetDescription), settingsSchema: SettingsSchema }, { additionalProperties: false })
export const UpdateWidgetInput = Type.Object({ name: Type.Optional(WidgetName), description: Type.Optional(WidgetDescription), settingsSchema: Type.Optional(SettingsSchema) }, { additionalProperties: false })

const iso = (d: Date): string => d.toISOString()
const isLabelList = (value: unknown): value is ClassifierLabel[] => Array.isArray(value)
const asObject = (value: unknown): Record<string, unknown> => (value !== null && typeof value === 'object' && !Array.isArray(value)) ? value as Record<string, unknown> : {}

export function toReport (row: Selectable<ReportsTable>): Report {
  return {
    id: row.id,
    targetType: row.target_type,
    targetId: row.target_id,
    reason: row.reason,
    details: row.details,
    status: row.status,
    createdAt: iso(row.created_at),
    ...(row.resolved_at === null ? {} : { resolvedAt: iso(row.resolved_at) }),
    ...(row.outcome === null ? {} : { outcome: row.outcome })
  }
}

export function toAdminReport (row: Selectable<ReportsTable>): AdminReport {
  return { ...toReport(row), reporterId: row.reporter_id, labels: isLabelList(row.labels) ? row.labels : [], resolvedBy: row.resolved_by }
}

export function toModerationAction (row: Selectable<ModerationActionsTable>): ModerationAction {
  return {
    id: row.id,
    kind: row.kind,
    targetType: row.target_type,
    targetId: row.target_id,
    userId: row.user_id,
    reportId: row.report_id,
    note: row.note,
    takenBy: row.taken_by,
    createdAt: iso(row.created_at),
    reversedAt: row.reversed_at === null ? null : iso(row.reversed_at)
  }
}

export function toAppeal (row: Selectable<AppealsTable>): Appeal {
  return {
    id: row.id,
    actionId: row.action_id,
    text: row.text,
    status: row.status,
    createdAt: iso(row.created_at),
    ...(row.decided_at === null ? {} : { decidedAt: iso(row.decided_at) })
  }
}

export function toMessage (row: Selectable<MessagesTable>): Message {
  return {
    id: row.id,
    kind: row.kind,
    title: row.title,
    body: row.body,
    createdAt: iso(row.created_at),
    readAt: row.read_at === null ? null : iso(row.read_at),
    ...(row.action_id === null ? {} : { actionId: row.action_id }),
    ...(row.link === null ? {} : { link: row.link })
  }
}

export function toMotd (row: Selectable<MotdTable>): Motd {
  return { id: row.id, text: row.text, severity: row.severity, startsAt: iso(row.starts_at), endsAt: iso(row.ends_at) }
}

export function toWidget (row: Selectable<WidgetsTable>): Widget {
  return { id: row.id, name: row.name, description: row.description, settingsSchema: asObject(row.settings_schema) }
}

export function toInstallation (row: Selectable<RoomWidgetsTable>): WidgetInstallation {
  return {
    id: row.id,
    roomId: row.room_id,
    widgetId: row.widget_id,
    settings: asObject(row.settings),
    installedBy: row.installed_by,
    version: row.version,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at)
  }
}
