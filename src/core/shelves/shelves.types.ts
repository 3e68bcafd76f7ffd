// Shelves and their links as both transports return them (DECISIONS §10), and the input schemas of
// shelf operations, shared by REST (route schemas) and RPC (core validation).
import type { Selectable } from 'kysely'
import { Type } from 'typebox'
import type { ShelfLinksTable, ShelvesTable } from '../../db/schema.js'
import { PageFields } from '../pagination.js'

export interface Link {
  id: string
  url: string
  title: string
  /** The link's fractional ordering key: a shelf's links sort by it, byte by byte. */
  position: string
  /** Counts changes to the link (moves included), as events carry it. */
  version: number
  createdAt: string
  updatedAt: string
}

/** A shelf's own fields: what a list item and a `shelf:updated` event carry. */
export interface ShelfSummary {
  id: string
  name: string
  description: string
  isPublic: boolean
  ownerId: string
  /** How many links the shelf holds. */
  linkCount: number
  /** Counts changes to the shelf's own fields (name, description, isPublic). */
  version: number
  createdAt: string
  updatedAt: string
}

/** A shelf with its links in order. */
export interface Shelf extends ShelfSummary {
  links: Link[]
}

/** DECISIONS §10. */
export const SHELVES_PER_USER_MAX = 100
export const LINKS_PER_SHELF_MAX = 500
export const URL_MAX = 2048
export const SHELF_NAME_MAX = 100
export const SHELF_DESCRIPTION_MAX = 1000
export const LINK_TITLE_MAX = 200

export const ShelfId = Type.String({ minLength: 1, maxLength: 200, errorMessage: 'must be a non-empty shelf id' })
export const LinkId = Type.String({ minLength: 1, maxLength: 200, errorMessage: 'must be a non-empty link id' })
const UserId = Type.String({ minLength: 1, maxLength: 200, errorMessage: 'must be a non-empty user id' })

const Name = Type.String({ minLength: 1, maxLength: SHELF_NAME_MAX, pattern: '\\S', errorMessage: `must be a string of 1 to ${SHELF_NAME_MAX} characters, not only spaces` })
const Description = Type.String({ maxLength: SHELF_DESCRIPTION_MAX, errorMessage: `must be a string of at most ${SHELF_DESCRIPTION_MAX} characters` })
const IsPublic = Type.Boolean({ errorMessage: 'must be true or false' })
/** The scheme, user-info and length rules are link-url.ts's, checked after this. */
const Url = Type.String({ minLength: 1, maxLength: URL_MAX, errorMessage: `must be an http or https URL of at most ${URL_MAX} characters` })
const Title = Type.String({ maxLength: LINK_TITLE_MAX, errorMessage: `must be a string of at most ${LINK_TITLE_MAX} characters` })
const AfterLinkId = Type.String({ minLength: 1, maxLength: 200, errorMessage: 'must be the id of a link on this shelf' })

export const ShelfIdParams = Type.Object({ shelfId: ShelfId })
export const LinkParams = Type.Object({ shelfId: ShelfId, linkId: LinkId })

/** Own shelves; with `userId` another user's public ones (one's own id: all of one's own). */
export const ListShelvesQuery = Type.Object({ ...PageFields, userId: Type.Optional(UserId) })

export const CreateShelfInput = Type.Object({
  name: Name,
  description: Type.Optional(Description),
  isPublic: Type.Optional(IsPublic)
}, { additionalProperties: false })

export const UpdateShelfBody = Type.Object({
  name: Type.Optional(Name),
  description: Type.Optional(Description),
  isPublic: Type.Optional(IsPublic)
}, { additionalProperties: false })
export const UpdateShelfInput = Type.Object({ shelfId: ShelfId, ...UpdateShelfBody.properties }, { additionalProperties: false })

export const AddLinkBody = Type.Object({
  url: Url,
  title: Type.Optional(Title),
  afterLinkId: Type.Optional(AfterLinkId)
}, { additionalProperties: false })
export const AddLinkInput = Type.Object({ shelfId: ShelfId, ...AddLinkBody.properties }, { additionalProperties: false })

export const MoveLinkBody = Type.Object({ afterLinkId: Type.Optional(AfterLinkId) }, { additionalProperties: false })
export const MoveLinkInput = Type.Object({ shelfId: ShelfId, linkId: LinkId, ...MoveLinkBody.properties }, { additionalProperties: false })

export function toLink (row: Selectable<ShelfLinksTable>): Link {
  return {
    id: row.id,
    url: row.url,
    title: row.title,
    position: row.position,
    version: row.version,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString()
  }
}

export function toShelfSummary (row: Selectable<ShelvesTable>, linkCount: number): ShelfSummary {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    isPublic: row.is_public,
    ownerId: row.owner_id,
    linkCount,
    version: row.version,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString()
  }
}
