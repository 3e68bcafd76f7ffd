// The layout task's worker side: runs in a pool thread (pool.ts), never on the event loop. It calls
// the core's pure layout function, so a pooled layout is exactly the one computed in-process.
import type { TilePosition } from '../core/canvas/canvas.types.js'
import { computeLayout, type LayoutAlgorithm } from '../core/canvas/layout.js'

export interface LayoutTaskInput {
  algorithm: LayoutAlgorithm
  tileIds: readonly string[]
}

export default function layoutTask ({ algorithm, tileIds }: LayoutTaskInput): TilePosition[] {
  return computeLayout(algorithm, tileIds)
}
