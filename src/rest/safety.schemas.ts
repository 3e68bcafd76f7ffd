// Response schemas of the trust-and-safety routes (DECISIONS §11), for the OpenAPI document and the
// serializer: each route's success envelope and its error replies (src/rest/errors.ts's body).
// Free-form JSON (widget settings and schemas) is `Type.Unknown()`, which the serializer writes whole.
import { Type, type TSchema } from 'typebox'

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

export const ErrorBody = Type.Object({
  error: Type.String(),
  message: Type.String(),
  details: Type.Optional(Type.Array(Type.Object({ field: Type.String(), issue: Type.String() }))),
  retryAfter: Type.Optional(Type.Number())
})

const Pagination = Type.Object({ page: Type.Integer(), limit: Type.Integer(), total: Type.Integer(), totalPages: Type.Integer() })

export const ReportSchema = Type.Object({
  id: Type.String(),
  targetType: Type.String(),
  targetId: Type.String(),
  reason: Type.String(),
  details: Nullable(Type.String()),
  status: Type.String(),
  createdAt: Type.String(),
  resolvedAt: Type.Optional(Type.String()),
  outcome: Type.Optional(Type.String())
})

export const AppealSchema = Type.Object({
  id: Type.String(),
  actionId: Type.String(),
  text: Type.String(),
  status: Type.String(),
  createdAt: Type.String(),
  decidedAt: Type.Optional(Type.String())
})

export const MessageSchema = Type.Object({
  id: Type.String(),
  kind: Type.String(),
  title: Type.String(),
  body: Type.String(),
  createdAt: Type.String(),
  readAt: Nullable(Type.String()),
  actionId: Type.Optional(Type.String())
})

export const MotdSchema = Type.Object({ id: Type.String(), text: Type.String(), severity: Type.String(), startsAt: Type.String(), endsAt: Type.String() })

export const WidgetSchema = Type.Object({ id: Type.String(), name: Type.String(), description: Type.String(), settingsSchema: Type.Unknown() })

export const InstallationSchema = Type.Object({
  id: Type.String(),
  roomId: Type.String(),
  widgetId: Type.String(),
  settings: Type.Unknown(),
  installedBy: Type.String(),
  version: Type.Integer(),
  createdAt: Type.String(),
  updatedAt: Type.String()
})

export const ClassificationSchema = Type.Object({
  labels: Type.Array(Type.Object({ label: Type.String(), score: Type.Number() })),
  flagged: Type.Boolean(),
  model: Type.String()
})

export const dataOf = <T extends TSchema>(schema: T) => Type.Object({ data: schema })
export const pageOf = <T extends TSchema>(schema: T) => Type.Object({ data: Type.Array(schema), pagination: Pagination })

/** The error replies every route of these groups may give (the gate's, validation's and the core's). */
export const ERRORS = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 429: ErrorBody, 503: ErrorBody }
export const NoContent = Type.Null({ description: 'No content' })
