// The REST responses as the OpenAPI document describes them (GET /openapi.json): the envelopes of
// SPEC's REST section and the resources the routes return. Documentation only: the REST scope
// serialises with JSON.stringify (src/rest/openapi.ts), so these schemas never drop a field from an
// answer; a resource the core grows is still sent, and shows in the document when added here.
import { Type, type TSchema } from 'typebox'

/** `{ data }`: every answer with a body but lists. */
export function dataOf (schema: TSchema): TSchema {
  return Type.Object({ data: schema })
}

export const Pagination = Type.Object({
  page: Type.Integer({ minimum: 1 }),
  limit: Type.Integer({ minimum: 1 }),
  total: Type.Integer({ minimum: 0 }),
  totalPages: Type.Integer({ minimum: 0 })
}, { description: 'SPEC Limits: page from 1, limit 1–100 (default 20).' })

/** `{ data: [...], pagination }`: every list. */
export function listOf (item: TSchema): TSchema {
  return Type.Object({ data: Type.Array(item), pagination: Pagination })
}

/** Response schemas of a route answering 200 `{ data }`. */
export const ok = (schema: TSchema): Record<number, TSchema> => ({ 200: { ...dataOf(schema), description: 'OK' } })
/** Response schemas of a route answering 201 `{ data }` (a create). */
export const created = (schema: TSchema): Record<number, TSchema> => ({ 201: { ...dataOf(schema), description: 'Created' } })
/** Response schemas of a list route. */
export const list = (item: TSchema): Record<number, TSchema> => ({ 200: { ...listOf(item), description: 'One page of the list' } })
/** Response schemas of a route answering 204 with no body. */
export const noContent: Record<number, TSchema> = { 204: Type.Null({ description: 'No content' }) }

/** SPEC Errors (REST): every refusal, from validation to an unavailable dependency. */
export const ErrorEnvelope = Type.Object({
  error: Type.String({ description: 'The kind: ValidationError, Unauthorized, NotFound, Conflict, …' }),
  message: Type.String(),
  details: Type.Optional(Type.Array(Type.Object({
    field: Type.String({ description: 'The offending field (or header), e.g. `name` or `Idempotency-Key`' }),
    issue: Type.String()
  }), { description: 'ValidationError: one entry per invalid field.' })),
  retryAfter: Type.Optional(Type.Integer({ description: 'Seconds to wait (429, 503), as in Retry-After.' })),
  requestId: Type.Optional(Type.String({ description: 'On 5xx: the X-Request-Id to quote when reporting it.' }))
})

/** Any JSON object: a resource this document does not detail yet (its route's tests pin its shape). */
export const AnyObject = Type.Object({}, { additionalProperties: true })

const Timestamp = Type.String({ format: 'date-time' })

export const UserSummary = Type.Object({ id: Type.String(), displayName: Type.String(), avatarUrl: Type.String() })

export const User = Type.Object({
  id: Type.String(),
  email: Type.String(),
  displayName: Type.String(),
  avatarUrl: Type.String(),
  createdAt: Timestamp
})

export const Room = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.Optional(Type.String()),
  isPublic: Type.Boolean(),
  createdBy: Type.String(),
  createdAt: Timestamp,
  updatedAt: Timestamp
})

export const Spark = Type.Object({
  id: Type.String(),
  title: Type.String(),
  content: Type.String(),
  roomId: Type.String(),
  x: Type.Number(),
  y: Type.Number(),
  createdBy: Type.String(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  version: Type.Integer({ description: 'Also sent as the ETag; If-Match takes it.' })
})

const OfficeRole = Type.Union([Type.Literal('owner'), Type.Literal('admin'), Type.Literal('member')])

export const Office = Type.Object({
  id: Type.String(),
  name: Type.String(),
  slug: Type.String(),
  description: Type.String(),
  isPublic: Type.Boolean(),
  createdBy: Type.String(),
  createdAt: Timestamp,
  updatedAt: Timestamp
})

export const Member = Type.Object({
  officeId: Type.String(),
  userId: Type.String(),
  role: OfficeRole,
  joinedAt: Timestamp,
  user: UserSummary
})

export const Invite = Type.Object({
  id: Type.String(),
  officeId: Type.String(),
  email: Type.String(),
  role: OfficeRole,
  invitedBy: Type.String(),
  createdAt: Timestamp,
  expiresAt: Timestamp
})

export const InviteInfo = Type.Object({
  officeId: Type.String(),
  officeName: Type.String(),
  officeSlug: Type.String(),
  inviterName: Type.String(),
  email: Type.String(),
  role: OfficeRole,
  expiresAt: Timestamp
})

export const Link = Type.Object({
  id: Type.String(),
  url: Type.String(),
  title: Type.String(),
  position: Type.String({ description: 'Fractional ordering key; links sort by it, byte by byte.' }),
  version: Type.Integer(),
  createdAt: Timestamp,
  updatedAt: Timestamp
})

const shelfFields = {
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  isPublic: Type.Boolean(),
  ownerId: Type.String(),
  linkCount: Type.Integer({ minimum: 0 }),
  version: Type.Integer(),
  createdAt: Timestamp,
  updatedAt: Timestamp
}
export const ShelfSummary = Type.Object(shelfFields)
export const Shelf = Type.Object({ ...shelfFields, links: Type.Array(Link) })

export const UploadedFile = Type.Object({
  id: Type.String(),
  url: Type.String({ description: 'APP_URL + /api/uploads/<id>' }),
  filename: Type.String(),
  size: Type.Integer({ minimum: 0 }),
  mimeType: Type.String(),
  kind: Type.String(),
  createdAt: Timestamp
})

/** A file's own bytes (GET /api/uploads/:fileId): any media type, so typed as unknown. */
export const fileBytes: Record<number, TSchema> = {
  200: Type.Unsafe<unknown>({ type: 'string', format: 'binary', description: 'The file, with its own media type and ETag' }),
  304: Type.Unsafe<unknown>({ type: 'null', description: 'Not modified (If-None-Match)' })
}
