// The Room resource as both transports return it (SPEC Resources: Room), and the input schemas of
// room operations, shared by REST (route schemas) and RPC (core validation).
import type { Selectable } from 'kysely'
import { Type } from 'typebox'
import type { RoomsTable } from '../../db/schema.js'
import { PageFields } from '../pagination.js'

export interface Room {
  id: string
  name: string
  description?: string
  isPublic: boolean
  createdBy: string
  createdAt: string
  updatedAt: string
}

export const ROOM_NAME_MAX = 100
/** SPEC leaves it open; 1000 characters is plenty for a room's blurb. */
export const ROOM_DESCRIPTION_MAX = 1000

export const RoomId = Type.String({ minLength: 1, maxLength: 200, errorMessage: 'must be a non-empty room id' })

const RoomName = Type.String({
  minLength: 1,
  maxLength: ROOM_NAME_MAX,
  // At least one visible character: a name of blanks is no name.
  pattern: '\\S',
  errorMessage: `Room name must be between 1 and ${ROOM_NAME_MAX} characters`
})
/** An empty description clears it. */
const RoomDescription = Type.String({ maxLength: ROOM_DESCRIPTION_MAX, errorMessage: `must be a string of at most ${ROOM_DESCRIPTION_MAX} characters` })
const IsPublic = Type.Boolean({ errorMessage: 'must be true or false' })

export const RoomIdParams = Type.Object({ roomId: RoomId })

export const ListRoomsQuery = Type.Object({
  ...PageFields,
  scope: Type.Optional(Type.Literal('public', { errorMessage: 'must be "public" when given' }))
})

export const CreateRoomInput = Type.Object({
  name: RoomName,
  description: Type.Optional(RoomDescription),
  isPublic: Type.Optional(IsPublic)
}, { additionalProperties: false })

export const UpdateRoomBody = Type.Object({
  name: Type.Optional(RoomName),
  description: Type.Optional(RoomDescription),
  isPublic: Type.Optional(IsPublic)
}, { additionalProperties: false })

export const UpdateRoomInput = Type.Object({ roomId: RoomId, ...UpdateRoomBody.properties }, { additionalProperties: false })

export function toRoom (row: Selectable<RoomsTable>): Room {
  return {
    id: row.id,
    name: row.name,
    ...(row.description === null ? {} : { description: row.description }),
    isPublic: row.is_public,
    createdBy: row.created_by,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString()
  }
}
