// ValidateLayout's findings (DECISIONS §6, §17), bounded whatever the room holds. A room of n tiles
// can hold n·(n−1)/2 overlapping pairs (499,500 at the 1,000-tile limit), so the answer and the
// `layout:validated` event list at most MAX_REPORTED_ISSUES of them, the first in issue order, and
// count every one exactly, neither step ever enumerating all pairs:
// - the count by a sweep over x with a Fenwick tree over y ranks, O(n log n) for any layout;
// - the first issues by a walk over the tiles in id order with the spatial index (grid.ts
//   `TileIndex`), stopping once it has them. Tiles whose top-left corners share an index cell all
//   overlap one another, so the walk visits at most a few tiles per cell (each of their pairs is an
//   issue it already listed) before it stops: a linear number of comparisons after the sort.
//
// Issue order: by `tileIds`, compared element by element in code-unit order, a list before any
// longer list it starts. An `overlap` issue names its two tiles smaller id first, an `off-grid`
// issue its one tile, so a tile's off-grid issue comes right before the overlaps it is the smaller
// id of: [a] off-grid, [a, b], [a, c], [b] off-grid, [b, c], …
import { MAX_REPORTED_ISSUES, type LayoutIssue, type TilePosition } from './canvas.types.js'
import { TILE_HEIGHT, TILE_WIDTH, TileIndex, compare, isOnGrid } from './grid.js'

export interface LayoutFindings {
  /** The first `limit` issues in issue order (above). */
  issues: LayoutIssue[]
  /** Every issue: one per off-grid tile plus one per overlapping pair. */
  issueCount: number
  /** Whether `issues` is shorter than `issueCount`. */
  truncated: boolean
}

export function layoutFindings (tiles: readonly TilePosition[], limit = MAX_REPORTED_ISSUES): LayoutFindings {
  const issues = firstIssues(tiles, limit)
  const issueCount = tiles.filter((t) => !isOnGrid(t)).length + countOverlappingPairs(tiles)
  return { issues, issueCount, truncated: issues.length < issueCount }
}

/** The first `limit` issues in issue order, without enumerating the rest. */
export function firstIssues (tiles: readonly TilePosition[], limit: number): LayoutIssue[] {
  const index = new TileIndex()
  for (const tile of tiles) index.add(tile)
  const issues: LayoutIssue[] = []
  for (const tile of [...tiles].sort((a, b) => compare(a.tileId, b.tileId))) {
    if (issues.length >= limit) break
    if (!isOnGrid(tile)) issues.push({ kind: 'off-grid', tileIds: [tile.tileId] })
    const later = index.overlapping(tile).map((o) => o.tileId).filter((id) => id > tile.tileId).sort(compare)
    for (const other of later.slice(0, Math.max(0, limit - issues.length))) issues.push({ kind: 'overlap', tileIds: [tile.tileId, other] })
  }
  return issues
}

/**
 * How many pairs of tiles overlap (grid.ts `tilesOverlap`), exactly, in O(n log n). Tiles are taken
 * in x order; those less than TILE_WIDTH to the left of the current one are kept in a Fenwick tree
 * indexed by the rank of their y, and the current tile counts those less than TILE_HEIGHT from it in
 * y. Every test is the same floating-point difference `tilesOverlap` computes (a correctly rounded
 * difference is monotonic in each operand, so the binary searches and the window agree with it
 * exactly), so the count matches the pairwise check for any coordinates.
 */
export function countOverlappingPairs (tiles: readonly TilePosition[]): number {
  const byX = [...tiles].sort((a, b) => a.x - b.x)
  const ys = [...new Set(tiles.map((t) => t.y))].sort((a, b) => a - b)
  const tree = new FenwickTree(ys.length)
  const rankOf = (y: number): number => firstIndex(ys, (v) => v >= y)
  let pairs = 0
  let left = 0
  for (const tile of byX) {
    for (; tile.x - (byX[left] as TilePosition).x >= TILE_WIDTH; left++) tree.add(rankOf((byX[left] as TilePosition).y), -1)
    const low = firstIndex(ys, (v) => tile.y - v < TILE_HEIGHT)
    const high = firstIndex(ys, (v) => v - tile.y >= TILE_HEIGHT)
    pairs += tree.sumBelow(high) - tree.sumBelow(low)
    tree.add(rankOf(tile.y), 1)
  }
  return pairs
}

/** The first index of sorted `values` where `holds` (monotonic: false, then true) is true; `values.length` if none. */
function firstIndex (values: readonly number[], holds: (value: number) => boolean): number {
  let low = 0
  let high = values.length
  while (low < high) {
    const middle = (low + high) >>> 1
    if (holds(values[middle] as number)) high = middle
    else low = middle + 1
  }
  return low
}

/** Counts per rank with prefix sums, both in O(log n). */
class FenwickTree {
  private readonly counts: Int32Array

  constructor (size: number) {
    this.counts = new Int32Array(size + 1)
  }

  add (rank: number, delta: number): void {
    for (let i = rank + 1; i < this.counts.length; i += i & -i) this.counts[i] = (this.counts[i] as number) + delta
  }

  /** The total at ranks below `rank`. */
  sumBelow (rank: number): number {
    let sum = 0
    for (let i = rank; i > 0; i -= i & -i) sum += this.counts[i] as number
    return sum
  }
}
