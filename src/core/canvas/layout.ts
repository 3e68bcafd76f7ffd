// Layout algorithms for ComputeLayout (DECISIONS §6). Pure and deterministic: the result depends
// only on the set of tile ids — never on current positions, call order or Math.random — so the
// same room always gets the same layout. Every result is on the grid with no two tiles overlapping.
import { forceCollide, forceSimulation, forceX, forceY, type SimulationNodeDatum } from 'd3-force'
import type { TilePosition } from './canvas.types.js'
import { GRID_SIZE, TILE_HEIGHT, TILE_WIDTH, TileIndex, compare, snapToGrid } from './grid.js'

export const LAYOUT_ALGORITHMS = ['force-directed', 'grid'] as const
export type LayoutAlgorithm = typeof LAYOUT_ALGORITHMS[number]

/** Bounded simulation length; alpha cools from 1 to d3's alphaMin (0.001) over exactly these ticks. */
export const FORCE_TICKS = 150
export const ALPHA_DECAY = 1 - Math.pow(0.001, 1 / FORCE_TICKS)

// The simulation runs in a space where y is stretched by TILE_WIDTH / TILE_HEIGHT, so a tile is a
// square and d3's circular collide force fits it well. Circles of this radius keep most tiles
// apart; the few overlaps left (square corners, snapping) are resolved after the simulation.
const STRETCH = TILE_WIDTH / TILE_HEIGHT
export const COLLIDE_RADIUS = TILE_WIDTH * 0.6
export const CENTRE_STRENGTH = 0.03
export const COLLIDE_ITERATIONS = 1

/** Distinct ids in code-unit order: the canonical form of "the set of tile ids". */
function canonical (tileIds: readonly string[]): string[] {
  return [...new Set(tileIds)].sort(compare)
}

/** FNV-1a over the canonical ids: the seed of the simulation's random source. */
function seedOf (ids: readonly string[]): number {
  let hash = 0x811c9dc5
  for (const id of ids) {
    for (let i = 0; i < id.length; i++) {
      hash ^= id.charCodeAt(i)
      hash = Math.imul(hash, 0x01000193)
    }
    hash ^= 0xff // separator, so ["ab", "c"] and ["a", "bc"] differ
    hash = Math.imul(hash, 0x01000193)
  }
  return hash >>> 0
}

/** mulberry32: a small, fast, seedable PRNG returning [0, 1). */
function seededRandom (seed: number): () => number {
  let state = seed
  return () => {
    state = (state + 0x6d2b79f5) | 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

interface Node extends SimulationNodeDatum {
  id: string
  x: number
  y: number
}

/**
 * Starting positions from the ids alone: a phyllotaxis spiral (d3's own initial arrangement)
 * scaled to tile size, in a seeded-shuffled order so neighbours are not just alphabetical.
 */
function initialNodes (ids: readonly string[], random: () => number): Node[] {
  const order = ids.map((id, i) => ({ id, i }))
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    const swap = order[i] as { id: string, i: number }
    order[i] = order[j] as { id: string, i: number }
    order[j] = swap
  }
  const angle = Math.PI * (3 - Math.sqrt(5))
  return order.map(({ id }, k) => {
    const radius = COLLIDE_RADIUS * Math.sqrt(0.5 + k)
    return { id, x: radius * Math.cos(k * angle), y: radius * Math.sin(k * angle) }
  })
}

/** Runs the d3 simulation for FORCE_TICKS ticks; returns tile centres in canvas units, by id order. */
function simulate (ids: readonly string[]): Array<{ id: string, cx: number, cy: number }> {
  const random = seededRandom(seedOf(ids))
  const nodes = initialNodes(ids, random)
  const simulation = forceSimulation(nodes)
    .randomSource(random)
    .alphaDecay(ALPHA_DECAY)
    .force('collide', forceCollide<Node>(COLLIDE_RADIUS).strength(1).iterations(COLLIDE_ITERATIONS))
    .force('x', forceX<Node>(0).strength(CENTRE_STRENGTH))
    .force('y', forceY<Node>(0).strength(CENTRE_STRENGTH))
    .stop()
  simulation.tick(FORCE_TICKS)
  return nodes.map((n) => ({ id: n.id, cx: n.x, cy: n.y / STRETCH }))
}

/** Next grid positions around (x, y), ring by ring (Chebyshev distance in grid steps). */
function * ring (x: number, y: number, r: number): Generator<{ x: number, y: number }> {
  for (let dx = -r; dx <= r; dx++) {
    yield { x: x + dx * GRID_SIZE, y: y - r * GRID_SIZE }
    yield { x: x + dx * GRID_SIZE, y: y + r * GRID_SIZE }
  }
  for (let dy = -r + 1; dy <= r - 1; dy++) {
    yield { x: x - r * GRID_SIZE, y: y + dy * GRID_SIZE }
    yield { x: x + r * GRID_SIZE, y: y + dy * GRID_SIZE }
  }
}

/**
 * Snaps each tile and, when its spot is taken, moves it to the nearest free grid spot. Tiles are
 * placed nearest-to-centre first (ties by id), so the outcome is deterministic and compact; the
 * spatial hash keeps each check to a few neighbours.
 */
export function resolveOverlaps (centres: ReadonlyArray<{ id: string, cx: number, cy: number }>): TilePosition[] {
  const wanted = centres
    .map((c) => ({ id: c.id, x: snapToGrid(c.cx - TILE_WIDTH / 2), y: snapToGrid(c.cy - TILE_HEIGHT / 2), d: c.cx * c.cx + c.cy * c.cy }))
    .sort((a, b) => a.d - b.d || compare(a.id, b.id))
  const index = new TileIndex()
  const placed = new Map<string, TilePosition>()
  for (const w of wanted) {
    let spot: TilePosition = { tileId: w.id, x: w.x, y: w.y }
    for (let r = 1; !index.isFree(spot); r++) {
      let best: TilePosition | undefined
      let bestDistance = Infinity
      for (const candidate of ring(w.x, w.y, r)) {
        const tile = { tileId: w.id, ...candidate }
        const distance = (candidate.x - w.x) ** 2 + (candidate.y - w.y) ** 2
        if (distance < bestDistance && index.isFree(tile)) {
          best = tile
          bestDistance = distance
        }
      }
      if (best !== undefined) spot = best
    }
    index.add(spot)
    placed.set(w.id, spot)
  }
  return centres.map((c) => placed.get(c.id) as TilePosition)
}

export function forceDirectedLayout (tileIds: readonly string[]): TilePosition[] {
  const ids = canonical(tileIds)
  if (ids.length === 0) return []
  const placed = resolveOverlaps(simulate(ids))
  // Anchored like the grid layout: the bounding box starts at the origin. Shifting by multiples
  // of the grid keeps every tile on it and changes no distances.
  const left = Math.min(...placed.map((t) => t.x))
  const top = Math.min(...placed.map((t) => t.y))
  return placed
    .map((t) => ({ tileId: t.tileId, x: t.x - left, y: t.y - top }))
    .sort((a, b) => compare(a.tileId, b.tileId))
}

/** Rows of ceil(√n) tiles in id order, one grid step apart, from the origin. */
export function gridLayout (tileIds: readonly string[]): TilePosition[] {
  const ids = canonical(tileIds)
  const columns = Math.max(1, Math.ceil(Math.sqrt(ids.length)))
  return ids.map((tileId, i) => ({
    tileId,
    x: (i % columns) * (TILE_WIDTH + GRID_SIZE),
    y: Math.floor(i / columns) * (TILE_HEIGHT + GRID_SIZE)
  }))
}

/** Positions for every tile id (sorted by id), snapped and overlap-free. */
export function computeLayout (algorithm: LayoutAlgorithm, tileIds: readonly string[]): TilePosition[] {
  return algorithm === 'grid' ? gridLayout(tileIds) : forceDirectedLayout(tileIds)
}
