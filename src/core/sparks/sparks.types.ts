// The Spark resource (SPEC Resources: Spark) and the input schemas of spark operations, shared by
// REST (route schemas) and RPC (core validation). `version` is its optimistic-concurrency counter.
import type { Selectable } from 'kysely'
import { Type } from 'typebox'
import type { SparksTable } from '../../db/schema.js'
import { Coordinate } from '../canvas/canvas.types.js'
import { PageFields } from '../pagination.js'
import { RoomId } from '../rooms/rooms.types.js'

export interface Spark {
  id: string
  title: string
  content: string
  roomId: string
  x: number
  y: number
  createdBy: string
  createdAt: string
  updatedAt: string
  version: number
}

/** SPEC leaves both open: a title is a headline, content a note. */
export const SPARK_TITLE_MAX = 200
export const SPARK_CONTENT_MAX = 10_000

export const SparkId = Type.String({ minLength: 1, maxLength: 200, errorMessage: 'must be a non-empty spark id' })

const Title = Type.String({
  minLength: 1,
  maxLength: SPARK_TITLE_MAX,
  pattern: '\\S',
  errorMessage: `must be a string of 1 to ${SPARK_TITLE_MAX} characters`
})
const Content = Type.String({ maxLength: SPARK_CONTENT_MAX, errorMessage: `must be a string of at most ${SPARK_CONTENT_MAX} characters` })
const Version = Type.Integer({ minimum: 1, maximum: 2_147_483_647, errorMessage: 'must be a positive integer (the spark\'s version)' })

export const SparkIdParams = Type.Object({ sparkId: SparkId })

export const ListSparksQuery = Type.Object({ roomId: RoomId, ...PageFields })

export const CreateSparkInput = Type.Object({
  title: Title,
  /** Optional on REST (an empty note); the RPC message always carries it. */
  content: Type.Optional(Content),
  roomId: RoomId,
  x: Coordinate,
  y: Coordinate
}, { additionalProperties: false })

export const UpdateSparkBody = Type.Object({
  title: Type.Optional(Title),
  content: Type.Optional(Content)
}, { additionalProperties: false })

/** `expectedVersion` comes from REST `If-Match` or the RPC field of that name. */
export const UpdateSparkInput = Type.Object({
  sparkId: SparkId,
  ...UpdateSparkBody.properties,
  expectedVersion: Type.Optional(Version)
}, { additionalProperties: false })

export const MoveSparkBody = Type.Object({ x: Coordinate, y: Coordinate }, { additionalProperties: false })

export const MoveSparkInput = Type.Object({ sparkId: SparkId, ...MoveSparkBody.properties }, { additionalProperties: false })

export function toSpark (row: Selectable<SparksTable>): Spark {
  return {
    id: row.id,
    title: row.title,
    content: row.content,
    roomId: row.room_id,
    x: row.x,
    y: row.y,
    createdBy: row.created_by,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    version: row.version
  }
}
