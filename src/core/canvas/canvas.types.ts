// Canvas shapes shared by operations and events (SPEC Canvas position result; DECISIONS §6), and
// the input schemas of canvas operations, shared by REST (route schemas) and RPC (core validation).
import { Type } from 'typebox'
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

export interface LayoutIssue {
  kind: 'overlap' | 'off-grid'
  tileIds: string[]
}

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

export interface LayoutValidation {
  roomId: string
  valid: boolean
  issues: LayoutIssue[]
}

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
