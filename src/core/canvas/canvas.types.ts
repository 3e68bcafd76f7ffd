// Canvas shapes shared by operations and events (SPEC Canvas position result; DECISIONS §6), and
// the input schemas of canvas operations, shared by REST (route schemas) and RPC (core validation).
import { Type, type Static } from 'typebox'
import { RoomId } from '../rooms/rooms.types.js'
import { LAYOUT_ALGORITHMS } from './layout.js'

export interface TilePosition {
  tileId: string
  x: number
  y: number
}

/**
 * A tile's position as stored, with its spark's `version` after the write that put it there. Events
 * are delivered in the order their transactions began, not committed, so two writes of one tile can
 * arrive in either order: a client keeps, per tile, the state with the highest version (README).
 */
export interface TileState extends TilePosition {
  version: number
}

export interface PositionResult extends TileState {
  snapped: boolean
  collisionDetected: boolean
}

/** At most this many issues in a validation answer or event (~100 bytes each: far below 64 KB). */
export const MAX_REPORTED_ISSUES = 100

export const LayoutIssueSchema = Type.Object({
  kind: Type.Union([Type.Literal('overlap'), Type.Literal('off-grid')]),
  tileIds: Type.Array(Type.String(), { minItems: 1, maxItems: 2, description: '`overlap`: the two tiles, smaller id first; `off-grid`: the one tile.' })
})
export type LayoutIssue = Static<typeof LayoutIssueSchema>

export interface CursorPosition {
  userId: string
  roomId: string
  x: number
  y: number
}

export interface CanvasState {
  roomId: string
  gridSize: number
  tileWidth: number
  tileHeight: number
  tiles: TileState[]
}

export interface LayoutResult {
  roomId: string
  positions: TileState[]
}

/**
 * ValidateLayout's answer and the `layout:validated` payload (DECISIONS §17): the first
 * MAX_REPORTED_ISSUES issues in issue order (layout-issues.ts) and the exact count of all.
 */
export const LayoutValidationSchema = Type.Object({
  roomId: Type.String(),
  valid: Type.Boolean({ description: 'True when the room has no issue at all (issueCount is 0).' }),
  issues: Type.Array(LayoutIssueSchema, {
    maxItems: MAX_REPORTED_ISSUES,
    description: `The first ${MAX_REPORTED_ISSUES} issues, ordered by tileIds compared element by element in code-unit order, a list before every longer list it begins: a tile's off-grid issue comes right before the overlaps it is the smaller id of.`
  }),
  issueCount: Type.Integer({ minimum: 0, description: 'Every issue: one per off-grid tile plus one per overlapping pair (exact, however many are listed).' }),
  truncated: Type.Boolean({ description: 'True when issues lists fewer than issueCount.' })
})
export type LayoutValidation = Static<typeof LayoutValidationSchema>

/** Canvas coordinates are finite numbers in ±COORDINATE_LIMIT (NaN, Infinity and strings are refused). */
export const COORDINATE_LIMIT = 1_000_000
export const MAX_BATCH_UPDATES = 100

export const Coordinate = Type.Number({
  minimum: -COORDINATE_LIMIT,
  maximum: COORDINATE_LIMIT,
  errorMessage: `must be a finite number between -${COORDINATE_LIMIT} and ${COORDINATE_LIMIT}`
})

export const TileId = Type.String({ minLength: 1, maxLength: 200, errorMessage: 'must be a non-empty tile (spark) id' })

export const UpdatePositionInput = Type.Object({ tileId: TileId, x: Coordinate, y: Coordinate }, { additionalProperties: false })

export const BatchUpdatePositionsInput = Type.Object({
  updates: Type.Array(UpdatePositionInput, { minItems: 1, maxItems: MAX_BATCH_UPDATES })
}, { additionalProperties: false })

export const ComputeLayoutInput = Type.Object({
  roomId: RoomId,
  algorithm: Type.Union([Type.Literal('force-directed'), Type.Literal('grid')], { errorMessage: `must be one of: ${LAYOUT_ALGORITHMS.join(', ')}` })
}, { additionalProperties: false })

export const RoomIdInput = Type.Object({ roomId: RoomId }, { additionalProperties: false })

/** Query string of GET /api/canvas/state: extra parameters (cache busters) are ignored. */
export const CanvasStateQuery = Type.Object({ roomId: RoomId })
