// Canvas shapes shared by operations and events (SPEC Canvas position result; DECISIONS §6).
export interface TilePosition {
  tileId: string
  x: number
  y: number
}

export interface PositionResult extends TilePosition {
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
