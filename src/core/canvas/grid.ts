// Canvas geometry (DECISIONS §6), pure: snap-to-grid and tile collision, in one place for moves,
// batches, layout and validation. A tile is TILE_WIDTH × TILE_HEIGHT with its top-left at (x, y);
// two tiles overlap when their rectangles share area (touching edges do not).
import type { TilePosition } from './canvas.types.js'

export const GRID_SIZE = 20
export const TILE_WIDTH = 200
export const TILE_HEIGHT = 120

/** Nearest multiple of GRID_SIZE; halves round up (toward +∞), and -0 is 0. */
export function snapToGrid (value: number): number {
  const snapped = Math.round(value / GRID_SIZE) * GRID_SIZE
  return snapped === 0 ? 0 : snapped
}

/** The snapped position, and whether snapping changed the requested one. */
export function snapPosition (requested: { x: number, y: number }): { x: number, y: number, snapped: boolean } {
  const x = snapToGrid(requested.x)
  const y = snapToGrid(requested.y)
  return { x, y, snapped: x !== requested.x || y !== requested.y }
}

export function isOnGrid (position: { x: number, y: number }): boolean {
  return snapToGrid(position.x) === position.x && snapToGrid(position.y) === position.y
}

/** Also written in SQL for moves (canvas.repository.ts `lockTileToMove`): keep the two alike. */
export function tilesOverlap (a: { x: number, y: number }, b: { x: number, y: number }): boolean {
  return Math.abs(a.x - b.x) < TILE_WIDTH && Math.abs(a.y - b.y) < TILE_HEIGHT
}

/**
 * Spatial hash with one cell per tile size: a tile overlapping another lies in the same or an
 * adjacent cell, so a query looks at 9 cells instead of every tile.
 */
export class TileIndex {
  private readonly cells = new Map<number, TilePosition[]>()

  private static cellKey (column: number, row: number): number {
    // Aliasing of far-apart cells only adds candidates; every candidate is checked exactly.
    return column * 1_048_576 + row
  }

  add (tile: TilePosition): void {
    const key = TileIndex.cellKey(Math.floor(tile.x / TILE_WIDTH), Math.floor(tile.y / TILE_HEIGHT))
    const cell = this.cells.get(key)
    if (cell === undefined) this.cells.set(key, [tile])
    else cell.push(tile)
  }

  /** Indexed tiles other than `tile` itself (by id) that overlap it. */
  overlapping (tile: TilePosition): TilePosition[] {
    const found: TilePosition[] = []
    const column = Math.floor(tile.x / TILE_WIDTH)
    const row = Math.floor(tile.y / TILE_HEIGHT)
    for (let dc = -1; dc <= 1; dc++) {
      for (let dr = -1; dr <= 1; dr++) {
        for (const other of this.cells.get(TileIndex.cellKey(column + dc, row + dr)) ?? []) {
          if (other.tileId !== tile.tileId && tilesOverlap(tile, other)) found.push(other)
        }
      }
    }
    return found
  }

  isFree (tile: TilePosition): boolean {
    return this.overlapping(tile).length === 0
  }
}

/** Code-unit order, the same on every machine (unlike localeCompare). */
export function compare (a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
