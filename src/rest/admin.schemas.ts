// Response schemas of the admin routes (DECISIONS §12) that the core's TypeBox types do not already
// give: the trust-and-safety resources as admins see them, built on the user-facing ones of
// src/rest/safety.schemas.ts. A reply is serialised through its schema, so each names every field.
import { Type, type TSchema } from 'typebox'
import { AdminRoomSchema as CoreAdminRoom, AdminUserSchema as CoreAdminUser, AuditEntrySchema as CoreAuditEntry } from '../core/admin/admin.types.js'
import { named } from './responses.js'
import { AppealSchema, ReportSchema } from './safety.schemas.js'

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

/** A report with its reporter, the classifier's triage labels and who resolved it. */
export const AdminReportSchema = named('AdminReport', Type.Object({
  ...ReportSchema.properties,
  reporterId: Type.String(),
  labels: Type.Array(Type.Object({ label: Type.String(), score: Type.Number() })),
  resolvedBy: Nullable(Type.String())
}))

export const ModerationActionSchema = named('ModerationAction', Type.Object({
  id: Type.String(),
  kind: Type.String(),
  targetType: Type.String(),
  targetId: Type.String(),
  userId: Type.String(),
  reportId: Nullable(Type.String()),
  note: Nullable(Type.String()),
  takenBy: Type.String(),
  createdAt: Type.String(),
  reversedAt: Nullable(Type.String())
}))

export const AdminAppealSchema = named('AdminAppeal', Type.Object({ ...AppealSchema.properties, userId: Type.String() }))

export const ResolutionSchema = named('Resolution', Type.Object({ report: AdminReportSchema, action: Nullable(ModerationActionSchema) }))
export const AppealDecisionSchema = named('AppealDecision', Type.Object({ appeal: AppealSchema, action: ModerationActionSchema }))
export const UnsuspensionSchema = named('Unsuspension', Type.Object({ userId: Type.String(), reversedActions: Type.Array(ModerationActionSchema) }))

/** The core's admin resources, named for the document. */
export const AdminUserSchema = named('AdminUser', CoreAdminUser)
export const AdminRoomSchema = named('AdminRoom', CoreAdminRoom)
export const AuditEntrySchema = named('AuditEntry', CoreAuditEntry)
