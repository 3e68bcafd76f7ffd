// Response schemas of the trust-and-safety routes (DECISIONS §11), for the OpenAPI document: the
// resources, on the envelopes of responses.ts. Free-form JSON (widget settings and schemas) is
// `Type.Unknown()`.
import { Type, type TSchema } from 'typebox'
import { ErrorEnvelope, named, noContent } from './responses.js'

export { dataOf, listOf as pageOf, ErrorEnvelope as ErrorBody } from './responses.js'

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

export const ReportSchema = named('Report', Type.Object({
  id: Type.String(),
  targetType: Type.String(),
  targetId: Type.String(),
  reason: Type.String(),
  details: Nullable(Type.String()),
  status: Type.String(),
  createdAt: Type.String(),
  resolvedAt: Type.Optional(Type.String()),
  outcome: Type.Optional(Type.String())
}))

export const AppealSchema = named('Appeal', Type.Object({
  id: Type.String(),
  actionId: Type.String(),
  text: Type.String(),
  status: Type.String(),
  createdAt: Type.String(),
  decidedAt: Type.Optional(Type.String())
}))

export const MessageSchema = named('Message', Type.Object({
  id: Type.String(),
  kind: Type.String(),
  title: Type.String(),
  body: Type.String(),
  createdAt: Type.String(),
  readAt: Nullable(Type.String()),
  actionId: Type.Optional(Type.String()),
  link: Type.Optional(Type.String())
}))

export const MotdSchema = named('Motd', Type.Object({ id: Type.String(), text: Type.String(), severity: Type.String(), startsAt: Type.String(), endsAt: Type.String() }))

export const WidgetSchema = named('Widget', Type.Object({ id: Type.String(), name: Type.String(), description: Type.String(), settingsSchema: Type.Unknown() }))

export const InstallationSchema = named('WidgetInstallation', Type.Object({
  id: Type.String(),
  roomId: Type.String(),
  widgetId: Type.String(),
  settings: Type.Unknown(),
  installedBy: Type.String(),
  version: Type.Integer(),
  createdAt: Type.String(),
  updatedAt: Type.String()
}))

export const ClassificationSchema = named('Classification', Type.Object({
  labels: Type.Array(Type.Object({ label: Type.String(), score: Type.Number() })),
  flagged: Type.Boolean(),
  model: Type.String()
}))

/** The core's refusals these routes may give; the gate's (400, 401, 429 with its headers, 503) are
 *  added from the catalogue by openapi.ts. */
export const ERRORS = { 403: ErrorEnvelope, 404: ErrorEnvelope, 409: ErrorEnvelope }
export const NoContent = noContent[204]!
