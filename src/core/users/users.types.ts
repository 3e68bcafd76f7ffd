// Users as both transports return them (DECISIONS §9), and the input schemas of the users
// operations, shared by REST (route schemas) and RPC (core validation).
import type { Selectable } from 'kysely'
import { Type } from 'typebox'
import type { UsersTable } from '../../db/schema.js'
import { PageFields } from '../pagination.js'
import { DISPLAY_NAME_MAX } from './display-name.js'

/** A user as their own profile shows them. */
export interface User {
  id: string
  email: string
  displayName: string
  avatarUrl: string
  createdAt: string
}

/** What any signed-in user may see of another: a User without the e-mail address. */
export type PublicUser = Omit<User, 'email'>

/** What every user may see of another wherever a user is shown (office members, avatars). */
export interface UserSummary {
  id: string
  displayName: string
  avatarUrl: string
}

/** GetDisplayInfo resolves at most this many ids per call. */
export const DISPLAY_INFO_MAX_IDS = 100
/** A search needs this many characters: a shorter prefix would list everyone. */
export const SEARCH_MIN_CHARS = 2
/** A search pages through (and counts) at most this many matches; a longer query narrows it. */
export const SEARCH_MAX_MATCHES = 1000

export const UserId = Type.String({ minLength: 1, maxLength: 200, errorMessage: 'must be a non-empty user id' })
// Bounded before the core normalises it (NFC, trim) and counts characters: a raw string may be
// somewhat longer than 64 characters only by what trimming removes.
const DisplayNameRaw = Type.String({ maxLength: 256, errorMessage: `must be a string of 1 to ${DISPLAY_NAME_MAX} characters` })
const AvatarUrlRaw = Type.String({ maxLength: 2048, errorMessage: 'must be an upload URL of this service, or empty to clear' })

export const UserIdParams = Type.Object({ userId: UserId })
export const GetUserInput = Type.Object({ userId: UserId }, { additionalProperties: false })

export const UpdateProfileInput = Type.Object({
  displayName: Type.Optional(DisplayNameRaw),
  avatarUrl: Type.Optional(AvatarUrlRaw)
}, { additionalProperties: false })

export const SearchUsersQuery = Type.Object({
  q: Type.String({ maxLength: 254, errorMessage: `must be at least ${SEARCH_MIN_CHARS} characters` }),
  ...PageFields
})

/** REST `GET /api/users/display-info?ids=<id>,<id>,…`: the same list as one comma-separated parameter. */
export const DisplayInfoQuery = Type.Object({
  ids: Type.String({ maxLength: DISPLAY_INFO_MAX_IDS * 201, errorMessage: `must be a comma-separated list of at most ${DISPLAY_INFO_MAX_IDS} user ids` })
})

export const GetDisplayInfoInput = Type.Object({
  userIds: Type.Array(UserId, { maxItems: DISPLAY_INFO_MAX_IDS, errorMessage: `must be a list of at most ${DISPLAY_INFO_MAX_IDS} user ids` })
}, { additionalProperties: false })

export function toUser (row: Pick<Selectable<UsersTable>, 'id' | 'email' | 'display_name' | 'avatar_url' | 'created_at'>): User {
  return {
    id: row.id,
    email: row.email,
    displayName: row.display_name,
    avatarUrl: row.avatar_url ?? '',
    createdAt: row.created_at.toISOString()
  }
}

/** How a user is shown wherever a user is shown (office members, presence). */
export function toUserSummary (row: Pick<Selectable<UsersTable>, 'id' | 'display_name' | 'avatar_url'>): UserSummary {
  return { id: row.id, displayName: row.display_name, avatarUrl: row.avatar_url ?? '' }
}

export function toPublicUser (row: Pick<Selectable<UsersTable>, 'id' | 'display_name' | 'avatar_url' | 'created_at'>): PublicUser {
  return { id: row.id, displayName: row.display_name, avatarUrl: row.avatar_url ?? '', createdAt: row.created_at.toISOString() }
}
