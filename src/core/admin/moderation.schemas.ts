// The trust-and-safety resources as the admin routes return them (src/core/safety/safety.types.ts has
// their interfaces), as response schemas, and the path and query schemas of those routes. A REST
// reply is serialised through its schema, so each mirrors its interface field for field.
import { Type } from 'typebox'
import { PageFields } from '../pagination.js'
import { APPEAL_DECISIONS, MOTD_SEVERITIES, REPORT_REASONS, REPORT_STATUSES, REPORT_TARGET_TYPES } from '../safety/safety.types.js'

const AdminId = (what: string) => Type.String({ minLength: 1, maxLength: 200, errorMessage: `must be a non-empty ${what} id` })
const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T) => Type.Union([schema, Type.Null()])
const Literals = <const T extends string>(values: readonly T[]) => Type.Enum([...values])

export const ReportIdParams = Type.Object({ reportId: AdminId('report') })
export const AppealIdParams = Type.Object({ appealId: AdminId('appeal') })
export const MotdIdParams = Type.Object({ motdId: AdminId('message of the day') })
export const WidgetIdParams = Type.Object({ widgetId: AdminId('widget') })

export const AdminAppealsQuery = Type.Object({
  ...PageFields,
  status: Type.Optional(Type.Union([Type.Literal('pending'), ...APPEAL_DECISIONS.map((d) => Type.Literal(d))], { errorMessage: 'must be one of pending, upheld, overturned' }))
}, { additionalProperties: false })

export const AdminReportSchema = Type.Object({
  id: Type.String(),
  targetType: Literals(REPORT_TARGET_TYPES),
  targetId: Type.String(),
  reason: Literals(REPORT_REASONS),
  details: Nullable(Type.String()),
  status: Literals(REPORT_STATUSES),
  createdAt: Type.String(),
  resolvedAt: Type.Optional(Type.String()),
  outcome: Type.Optional(Type.String()),
  reporterId: Type.String(),
  labels: Type.Array(Type.Object({ label: Type.String(), score: Type.Number() })),
  resolvedBy: Nullable(Type.String())
})

export const ModerationActionSchema = Type.Object({
  id: Type.String(),
  kind: Literals(['hide', 'suspend', 'warn']),
  targetType: Literals(REPORT_TARGET_TYPES),
  targetId: Type.String(),
  userId: Type.String(),
  reportId: Nullable(Type.String()),
  note: Nullable(Type.String()),
  takenBy: Type.String(),
  createdAt: Type.String(),
  reversedAt: Nullable(Type.String())
})

export const AppealSchema = Type.Object({
  id: Type.String(),
  actionId: Type.String(),
  text: Type.String(),
  status: Literals(['pending', ...APPEAL_DECISIONS]),
  createdAt: Type.String(),
  decidedAt: Type.Optional(Type.String())
})

export const AdminAppealSchema = Type.Object({ ...AppealSchema.properties, userId: Type.String() })

export const MotdSchema = Type.Object({
  id: Type.String(),
  text: Type.String(),
  severity: Literals(MOTD_SEVERITIES),
  startsAt: Type.String(),
  endsAt: Type.String()
})

export const WidgetSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  settingsSchema: Type.Record(Type.String(), Type.Unknown())
})

export const ResolutionSchema = Type.Object({ report: AdminReportSchema, action: Type.Union([ModerationActionSchema, Type.Null()]) })
export const AppealDecisionSchema = Type.Object({ appeal: AppealSchema, action: ModerationActionSchema })
export const UnsuspensionSchema = Type.Object({ userId: Type.String(), reversedActions: Type.Array(ModerationActionSchema) })
