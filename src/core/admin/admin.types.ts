// Administration (DECISIONS §12): the resources admins read, the audit entry, and the input schemas,
// shared by the REST routes (route schemas) and the core (validation). Admin routes are REST only.
import type { Selectable } from 'kysely'
import { Type, type Static } from 'typebox'
import type { AdminAuditLogTable } from '../../db/schema.js'
import { PageFields } from '../pagination.js'
import { RoomId } from '../rooms/rooms.types.js'
import { UserId } from '../users/users.types.js'
import { APPEAL_DECISIONS } from '../safety/safety.types.js'

export type AdminRole = 'admin' | 'super_admin'

/** A filter's text: bounded, and never empty (an empty filter would silently mean "no filter"). */
const FilterText = (max: number) => Type.String({ minLength: 1, maxLength: max, errorMessage: `must be 1 to ${max} characters` })

export const AdminUserIdParams = Type.Object({ userId: UserId })
export const AdminRoomIdParams = Type.Object({ roomId: RoomId })

const AdminId = (what: string) => Type.String({ minLength: 1, maxLength: 200, errorMessage: `must be a non-empty ${what} id` })

export const ReportIdParams = Type.Object({ reportId: AdminId('report') })
export const AppealIdParams = Type.Object({ appealId: AdminId('appeal') })
export const MotdIdParams = Type.Object({ motdId: AdminId('message of the day') })
export const WidgetIdParams = Type.Object({ widgetId: AdminId('widget') })

export const AdminAppealsQuery = Type.Object({
  ...PageFields,
  status: Type.Optional(Type.Enum(['pending', ...APPEAL_DECISIONS], { errorMessage: 'must be one of pending, upheld, overturned' }))
}, { additionalProperties: false })

export const AdminListUsersQuery = Type.Object({
  ...PageFields,
  /** Exactly this address (any case). */
  email: Type.Optional(FilterText(320)),
  /** Part of the e-mail address or display name. */
  q: Type.Optional(FilterText(100))
}, { additionalProperties: false })

export const AdminListRoomsQuery = Type.Object({
  ...PageFields,
  createdBy: Type.Optional(UserId),
  isPublic: Type.Optional(Type.Boolean({ errorMessage: 'must be true or false' })),
  /** Part of the room's name. */
  q: Type.Optional(FilterText(100))
}, { additionalProperties: false })

export const AuditQuery = Type.Object({
  ...PageFields,
  /** The token `sub` of the admin who acted. */
  actor: Type.Optional(FilterText(255)),
  /** An action name as the entries show it (`rooms.delete`). */
  action: Type.Optional(FilterText(100)),
  targetId: Type.Optional(FilterText(200))
}, { additionalProperties: false })

/** A user as admins see them: the profile with the e-mail address, and how much they own. */
export const AdminUserSchema = Type.Object({
  id: Type.String(),
  email: Type.String(),
  displayName: Type.String(),
  avatarUrl: Type.String(),
  createdAt: Type.String(),
  /** Set while the account is suspended (DECISIONS §11). */
  suspendedAt: Type.Union([Type.String(), Type.Null()]),
  roomCount: Type.Integer()
})
export type AdminUser = Static<typeof AdminUserSchema>

/** A room as admins see them, private ones included, with its member count. */
export const AdminRoomSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.Optional(Type.String()),
  isPublic: Type.Boolean(),
  createdBy: Type.String(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
  /** Set while a moderator's `hide` stands (DECISIONS §11). */
  hiddenAt: Type.Union([Type.String(), Type.Null()]),
  memberCount: Type.Integer(),
  sparkCount: Type.Integer()
})
export type AdminRoom = Static<typeof AdminRoomSchema>

export const AuditEntrySchema = Type.Object({
  id: Type.String(),
  at: Type.String(),
  actor: Type.Object({ sub: Type.String(), email: Type.Union([Type.String(), Type.Null()]) }),
  action: Type.String(),
  targetType: Type.Union([Type.String(), Type.Null()]),
  targetId: Type.Union([Type.String(), Type.Null()]),
  outcome: Type.Union([Type.Literal('permitted'), Type.Literal('denied')]),
  details: Type.Record(Type.String(), Type.Unknown()),
  requestId: Type.String(),
  clientIp: Type.String()
})
export type AuditEntry = Static<typeof AuditEntrySchema>

export function toAuditEntry (row: Selectable<AdminAuditLogTable>): AuditEntry {
  return {
    id: row.id,
    at: row.at.toISOString(),
    actor: { sub: row.actor_sub, email: row.actor_email },
    action: row.action,
    targetType: row.target_type,
    targetId: row.target_id,
    outcome: row.outcome,
    details: row.details,
    requestId: row.request_id,
    clientIp: row.client_ip
  }
}
