// The REST responses as the OpenAPI document describes them (GET /openapi.json): the envelopes of
// SPEC's REST section and the resources the routes return. Documentation only: the REST scope
// serialises with JSON.stringify (src/app.ts), so these schemas never drop a field from an answer.
//
// Each resource is named (`named`): its `$id` becomes its name in the document's
// components.schemas, so generated clients get `Room`, `Spark`, … rather than anonymous inline
// types. A resource the core has a type for is checked against that type when this file compiles
// (`describes<T>()`): a field the core adds or drops fails the type check here, so the document
// cannot silently fall behind what the core answers.
import { Type, type Static, type TSchema } from 'typebox'
import { LayoutValidationSchema, type CanvasState as CoreCanvasState, type LayoutResult as CoreLayoutResult, type LayoutValidation as CoreLayoutValidation, type PositionResult as CorePositionResult } from '../core/canvas/canvas.types.js'
import type { Invite as CoreInvite, InviteInfo as CoreInviteInfo, Member as CoreMember, Office as CoreOffice } from '../core/offices/offices.types.js'
import type { CvPreview as CoreCvPreview, SuggestedExperience as CoreSuggestedExperience } from '../core/passport/cv.types.js'
import type { Experience as CoreExperience, Passport as CorePassport, Skill as CoreSkill } from '../core/passport/passport.types.js'
import { MAX_LISTED_PRESENT, type PresentUser as CorePresentUser, type RoomPresence as CoreRoomPresence } from '../core/presence/presence.types.js'
import type { Room as CoreRoom } from '../core/rooms/rooms.types.js'
import type { RtcConfig as CoreRtcConfig, RtcToken as CoreRtcToken } from '../core/rtc/rtc.types.js'
import type { Link as CoreLink, Shelf as CoreShelf, ShelfSummary as CoreShelfSummary } from '../core/shelves/shelves.types.js'
import type { Spark as CoreSpark } from '../core/sparks/sparks.types.js'
import type { UploadedFile as CoreUploadedFile } from '../core/uploads/uploads.types.js'
import type { PublicUser as CorePublicUser, User as CoreUser, UserSummary as CoreUserSummary } from '../core/users/users.types.js'

/** A schema with a name in the document's components (its `$id` and `title`). */
export function named<T extends TSchema> (name: string, schema: T): T {
  return { ...schema, $id: name, title: name }
}

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false

/** `named`, for a resource the core has the type `T` of: compiles only while the schema describes `T`. */
function describes<T> () {
  return <S extends TSchema>(name: string, schema: S & (Same<Static<S>, T> extends true ? unknown : { 'the schema does not describe the core type': T })): S => named(name, schema)
}

/** `{ data }`: every answer with a body but lists. */
export function dataOf (schema: TSchema): TSchema {
  return Type.Object({ data: schema })
}

export const Pagination = named('Pagination', Type.Object({
  page: Type.Integer({ minimum: 1 }),
  limit: Type.Integer({ minimum: 1 }),
  total: Type.Integer({ minimum: 0 }),
  totalPages: Type.Integer({ minimum: 0 })
}, { description: 'SPEC Limits: page from 1, limit 1–100 (default 20).' }))

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
/** Response schemas of a route answering a Server-Sent Events stream. */
export const eventStream = (description: string): Record<number, TSchema> => ({
  200: Type.Unsafe<string>({ description, content: { 'text/event-stream': { schema: { type: 'string', description: 'SSE messages: `event:`, `id:` and `data:` lines (the SPEC envelope as JSON), comments as `: ping`' } } } })
})

/** SPEC Errors (REST): every refusal, from validation to an unavailable dependency. */
export const ErrorEnvelope = named('ErrorEnvelope', Type.Object({
  error: Type.String({ description: 'The kind: ValidationError, Unauthorized, NotFound, Conflict, …' }),
  message: Type.String(),
  details: Type.Optional(Type.Array(Type.Object({
    field: Type.String({ description: 'The offending field (or header), e.g. `name` or `Idempotency-Key`' }),
    issue: Type.String()
  }), { description: 'ValidationError: one entry per invalid field.' })),
  retryAfter: Type.Optional(Type.Integer({ description: 'Seconds to wait (429, 503), as in Retry-After.' })),
  requestId: Type.Optional(Type.String({ description: 'On 5xx: the X-Request-Id to quote when reporting it.' }))
}))

const Timestamp = Type.String({ format: 'date-time' })
const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

export const UserSummary = describes<CoreUserSummary>()('UserSummary', Type.Object({ id: Type.String(), displayName: Type.String(), avatarUrl: Type.String() }))

const userFields = { id: Type.String(), displayName: Type.String(), avatarUrl: Type.String(), createdAt: Timestamp }
export const PublicUser = describes<CorePublicUser>()('PublicUser', Type.Object(userFields, { description: 'What any signed-in user sees of another: no e-mail address.' }))
export const User = describes<CoreUser>()('User', Type.Object({ ...userFields, email: Type.String() }, { description: 'A user as their own profile shows them.' }))

export const Room = describes<CoreRoom>()('Room', Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.Optional(Type.String()),
  isPublic: Type.Boolean(),
  createdBy: Type.String(),
  createdAt: Timestamp,
  updatedAt: Timestamp
}))

export const Spark = describes<CoreSpark>()('Spark', Type.Object({
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
}))

const tileState = { tileId: Type.String(), x: Type.Number(), y: Type.Number(), version: Type.Integer() }
export const TileState = named('TileState', Type.Object(tileState, { description: "A tile's position with its spark's version after the write that put it there." }))
export const PositionResult = describes<CorePositionResult>()('PositionResult', Type.Object({ ...tileState, snapped: Type.Boolean(), collisionDetected: Type.Boolean() }))
export const SparkMove = describes<{ spark: CoreSpark, position: CorePositionResult }>()('SparkMove', Type.Object({ spark: Spark, position: PositionResult }))
export const PositionBatch = describes<{ positions: CorePositionResult[] }>()('PositionBatch', Type.Object({ positions: Type.Array(PositionResult) }))
export const CanvasState = describes<CoreCanvasState>()('CanvasState', Type.Object({
  roomId: Type.String(),
  gridSize: Type.Number(),
  tileWidth: Type.Number(),
  tileHeight: Type.Number(),
  tiles: Type.Array(TileState)
}))
export const LayoutResult = describes<CoreLayoutResult>()('LayoutResult', Type.Object({ roomId: Type.String(), positions: Type.Array(TileState) }))
export const LayoutValidation = describes<CoreLayoutValidation>()('LayoutValidation', LayoutValidationSchema)
export const PresentUser = describes<CorePresentUser>()('PresentUser', Type.Object({
  userId: Type.String(),
  displayName: Type.String(),
  avatarUrl: Type.String({ description: 'An upload URL of this service, or empty.' }),
  since: Type.String({ format: 'date-time', description: 'When the user became present in the room.' }),
  lastActiveAt: Type.String({ format: 'date-time', description: 'Their latest cursor or presence report there.' })
}, { description: 'A user present on a room\'s canvas (DECISIONS §17).' }))
export const RoomPresence = describes<CoreRoomPresence>()('RoomPresence', Type.Object({
  roomId: Type.String(),
  users: Type.Array(PresentUser, { maxItems: MAX_LISTED_PRESENT, description: `Oldest first, at most ${MAX_LISTED_PRESENT}; suspended users are never listed.` }),
  total: Type.Integer({ minimum: 0, description: 'Every present user the caller may be shown, listed or not.' }),
  more: Type.Integer({ minimum: 0, description: 'How many of them are not listed: `total` minus the length of `users`.' })
}))

const OfficeRole = Type.Union([Type.Literal('owner'), Type.Literal('admin'), Type.Literal('member')])

export const Office = describes<CoreOffice>()('Office', Type.Object({
  id: Type.String(),
  name: Type.String(),
  slug: Type.String(),
  description: Type.String(),
  isPublic: Type.Boolean(),
  createdBy: Type.String(),
  createdAt: Timestamp,
  updatedAt: Timestamp
}))

export const Member = describes<CoreMember>()('Member', Type.Object({
  officeId: Type.String(),
  userId: Type.String(),
  role: OfficeRole,
  joinedAt: Timestamp,
  user: UserSummary
}))

export const Invite = describes<CoreInvite>()('Invite', Type.Object({
  id: Type.String(),
  officeId: Type.String(),
  email: Type.String(),
  role: OfficeRole,
  invitedBy: Type.String(),
  createdAt: Timestamp,
  expiresAt: Timestamp
}))

export const InviteAcceptance = describes<{ office: CoreOffice, member: CoreMember }>()('InviteAcceptance', Type.Object({ office: Office, member: Member }))

export const InviteInfo = describes<CoreInviteInfo>()('InviteInfo', Type.Object({
  officeId: Type.String(),
  officeName: Type.String(),
  officeSlug: Type.String(),
  inviterName: Type.String(),
  email: Type.String(),
  role: OfficeRole,
  expiresAt: Timestamp
}))

export const Link = describes<CoreLink>()('Link', Type.Object({
  id: Type.String(),
  url: Type.String(),
  title: Type.String(),
  position: Type.String({ description: 'Fractional ordering key; links sort by it, byte by byte.' }),
  version: Type.Integer(),
  createdAt: Timestamp,
  updatedAt: Timestamp
}))

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
export const ShelfSummary = describes<CoreShelfSummary>()('ShelfSummary', Type.Object(shelfFields))
export const Shelf = describes<CoreShelf>()('Shelf', Type.Object({ ...shelfFields, links: Type.Array(Link) }))

const yearMonth = Type.String({ pattern: '^[0-9]{4}-[0-9]{2}$', description: 'YYYY-MM' })
export const Skill = describes<CoreSkill>()('Skill', Type.Object({ id: Type.String(), name: Type.String(), level: Nullable(Type.Integer({ minimum: 1, maximum: 5 })) }))
export const Experience = describes<CoreExperience>()('Experience', Type.Object({
  id: Type.String(),
  title: Type.String(),
  company: Type.String(),
  startDate: yearMonth,
  endDate: Nullable(yearMonth),
  description: Type.String()
}))
export const Passport = describes<CorePassport>()('Passport', Type.Object({
  userId: Type.String(),
  headline: Type.String(),
  summary: Type.String(),
  location: Type.String(),
  isPublic: Type.Boolean(),
  skills: Type.Array(Skill),
  experience: Type.Array(Experience),
  updatedAt: Timestamp
}))
const SuggestedExperience = describes<CoreSuggestedExperience>()('SuggestedExperience', Type.Object({
  title: Type.String(),
  company: Type.String(),
  startDate: yearMonth,
  endDate: Nullable(yearMonth),
  description: Type.String()
}))
export const CvPreview = describes<CoreCvPreview>()('CvPreview', Type.Object({
  skills: Type.Array(Type.String()),
  experience: Type.Array(SuggestedExperience),
  headline: Type.Optional(Type.String()),
  textLength: Type.Integer({ minimum: 0 })
}))

export const RtcToken = describes<CoreRtcToken>()('RtcToken', Type.Object({ token: Type.String(), expiresAt: Timestamp, appId: Type.String() }))
export const RtcConfig = describes<CoreRtcConfig>()('RtcConfig', Type.Object({ appId: Type.String(), enabled: Type.Boolean(), tokenTtlSeconds: Type.Integer() }))

export const DeletionRequest = describes<{ expiresAt: string }>()('DeletionRequest', Type.Object({ expiresAt: Timestamp }, { description: 'The mailed deletion link is valid until `expiresAt`.' }))
export const LoginRequest = named('LoginRequest', Type.Object({ sent: Type.Boolean(), expiresAt: Timestamp }))

export const UploadedFile = describes<CoreUploadedFile>()('Upload', Type.Object({
  id: Type.String(),
  url: Type.String({ description: 'APP_URL + /api/uploads/<id>' }),
  filename: Type.String(),
  size: Type.Integer({ minimum: 0 }),
  mimeType: Type.String(),
  kind: Type.Union([Type.Literal('avatar'), Type.Literal('attachment')]),
  createdAt: Timestamp
}))

/** A file's own bytes (GET /api/uploads/:fileId): any media type. */
export const fileBytes: Record<number, TSchema> = {
  200: Type.Unsafe<unknown>({ description: 'The file, with its own media type', content: { '*/*': { schema: { type: 'string', format: 'binary' } } } })
}
