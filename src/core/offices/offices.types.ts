// Offices as both transports return them (DECISIONS §13), and the input schemas of office and
// invitation operations, shared by REST (route schemas) and RPC (core validation).
import type { Selectable } from 'kysely'
import { Type } from 'typebox'
import type { OfficeInvitesTable, OfficeRole, OfficesTable } from '../../db/schema.js'
import { Email } from '../auth/auth.types.js'
import { PageFields } from '../pagination.js'
import type { UserSummary } from '../users/users.types.js'

export type { OfficeRole }

export interface Office {
  id: string
  name: string
  slug: string
  description: string
  isPublic: boolean
  createdBy: string
  createdAt: string
  updatedAt: string
}

export interface Member {
  officeId: string
  userId: string
  role: OfficeRole
  joinedAt: string
  user: UserSummary
}

export interface Invite {
  id: string
  officeId: string
  email: string
  role: OfficeRole
  invitedBy: string
  createdAt: string
  expiresAt: string
}

/** What anyone holding an invitation's token may learn of it (GET /api/invites/:token). */
export interface InviteInfo {
  officeId: string
  officeName: string
  officeSlug: string
  inviterName: string
  email: string
  role: OfficeRole
  expiresAt: string
}

export const OFFICE_NAME_MAX = 100
export const OFFICE_DESCRIPTION_MAX = 1000
/** DECISIONS §13: an invitation lives 7 days. */
export const INVITE_TTL_MS = 7 * 24 * 3600_000

export const OfficeId = Type.String({ minLength: 1, maxLength: 200, errorMessage: 'must be a non-empty office id' })
const UserId = Type.String({ minLength: 1, maxLength: 200, errorMessage: 'must be a non-empty user id' })
const InviteId = Type.String({ minLength: 1, maxLength: 200, errorMessage: 'must be a non-empty invitation id' })

const OfficeName = Type.String({ minLength: 1, maxLength: OFFICE_NAME_MAX, pattern: '\\S', errorMessage: `must be a string of 1 to ${OFFICE_NAME_MAX} characters` })
/** 3–48 lower-case letters, digits and hyphens, not starting or ending with a hyphen. Anchored with
 *  one quantifier, so matching takes time linear in the (already length-checked) input. */
const Slug = Type.String({
  minLength: 3,
  maxLength: 48,
  pattern: '^[a-z0-9][a-z0-9-]*[a-z0-9]$',
  errorMessage: 'must be 3 to 48 lower-case letters, digits and hyphens, not starting or ending with a hyphen'
})
const Description = Type.String({ maxLength: OFFICE_DESCRIPTION_MAX, errorMessage: `must be a string of at most ${OFFICE_DESCRIPTION_MAX} characters` })
const IsPublic = Type.Boolean({ errorMessage: 'must be true or false' })
export const Role = Type.Union([Type.Literal('owner'), Type.Literal('admin'), Type.Literal('member')], { errorMessage: 'must be one of owner, admin, member' })
const Token = Type.String({ minLength: 1, maxLength: 512, errorMessage: 'must be a non-empty token' })

export const OfficeIdParams = Type.Object({ officeId: OfficeId })
export const MemberParams = Type.Object({ officeId: OfficeId, userId: UserId })
export const InviteParams = Type.Object({ officeId: OfficeId, inviteId: InviteId })
export const InviteTokenInput = Type.Object({ token: Token }, { additionalProperties: false })
/** Accepting names the invitation by the mailed link's token or, from the invitee's inbox, by its id. */
export const AcceptInviteInput = Type.Object({ token: Type.Optional(Token), inviteId: Type.Optional(InviteId) }, { additionalProperties: false })

export const ListOfficesQuery = Type.Object({
  ...PageFields,
  scope: Type.Optional(Type.Literal('public', { errorMessage: 'must be "public" when given' }))
})

export const CreateOfficeInput = Type.Object({
  name: OfficeName,
  slug: Slug,
  description: Type.Optional(Description),
  isPublic: Type.Optional(IsPublic)
}, { additionalProperties: false })

export const UpdateOfficeBody = Type.Object({
  name: Type.Optional(OfficeName),
  slug: Type.Optional(Slug),
  description: Type.Optional(Description),
  isPublic: Type.Optional(IsPublic)
}, { additionalProperties: false })
export const UpdateOfficeInput = Type.Object({ officeId: OfficeId, ...UpdateOfficeBody.properties }, { additionalProperties: false })

export const InviteBody = Type.Object({ email: Email, role: Role }, { additionalProperties: false })
export const InviteInput = Type.Object({ officeId: OfficeId, ...InviteBody.properties }, { additionalProperties: false })

export const ListMembersQuery = Type.Object({ ...PageFields })
export const ListMembersInput = Type.Object({ officeId: OfficeId, ...PageFields })
export const ListInvitesInput = Type.Object({ officeId: OfficeId, ...PageFields })

export const RoleBody = Type.Object({ role: Role }, { additionalProperties: false })
export const UpdateMemberRoleInput = Type.Object({ officeId: OfficeId, userId: UserId, role: Role }, { additionalProperties: false })

export function toOffice (row: Selectable<OfficesTable>): Office {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    description: row.description,
    isPublic: row.is_public,
    createdBy: row.created_by,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString()
  }
}

export function toInvite (row: Selectable<OfficeInvitesTable>): Invite {
  return {
    id: row.id,
    officeId: row.office_id,
    email: row.email,
    role: row.role,
    invitedBy: row.invited_by,
    createdAt: row.created_at.toISOString(),
    expiresAt: row.expires_at.toISOString()
  }
}
