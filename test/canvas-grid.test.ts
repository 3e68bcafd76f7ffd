// The pure canvas geometry (snap, collision, validation) and the layout algorithms, without the app.
import t, { type Test } from 'tap'
import { GRID_SIZE, TILE_HEIGHT, TILE_WIDTH, TileIndex, isOnGrid, snapPosition, snapToGrid, tilesOverlap } from '../src/core/canvas/grid.js'
import { countOverlappingPairs, firstIssues, layoutFindings } from '../src/core/canvas/layout-issues.js'
import { computeLayout, forceDirectedLayout, gridLayout } from '../src/core/canvas/layout.js'
import type { TilePosition } from '../src/core/canvas/canvas.types.js'
import { paginationOf, pageWindow } from '../src/core/pagination.js'

function noOverlaps (t: Test, tiles: readonly TilePosition[]): void {
  const pairs: string[] = []
  for (let i = 0; i < tiles.length; i++) {
    for (let j = i + 1; j < tiles.length; j++) {
      if (tilesOverlap(tiles[i] as TilePosition, tiles[j] as TilePosition)) pairs.push(`${tiles[i]?.tileId}/${tiles[j]?.tileId}`)
    }
  }
  t.same(pairs, [], 'no two tiles overlap (checked pairwise)')
}

t.test('geometry constants are the DECISIONS §6 values', async (t) => {
  t.equal(GRID_SIZE, 20)
  t.equal(TILE_WIDTH, 200)
  t.equal(TILE_HEIGHT, 120)
})

t.test('snap rounds to the nearest multiple of 20 and says whether it changed anything', async (t) => {
  t.same(snapPosition({ x: 33, y: 47 }), { x: 40, y: 40, snapped: true })
  t.same(snapPosition({ x: 40, y: 60 }), { x: 40, y: 60, snapped: false })
  t.same(snapPosition({ x: 0, y: 0 }), { x: 0, y: 0, snapped: false })
  t.same(snapPosition({ x: 40, y: 61 }), { x: 40, y: 60, snapped: true }, 'one coordinate off is enough')
  t.equal(snapToGrid(29.999), 20)
  t.equal(snapToGrid(30), 40, 'halves round up')
  t.equal(snapToGrid(-30), -20, 'halves round up (toward +∞) for negatives too')
  t.equal(snapToGrid(-31), -40)
  t.ok(Object.is(snapToGrid(-5), 0), '-0 becomes 0')
  t.equal(snapToGrid(1_000_000), 1_000_000)
  t.equal(snapToGrid(-999_999), -1_000_000)
  t.ok(isOnGrid({ x: -40, y: 120 }))
  t.notOk(isOnGrid({ x: 40.5, y: 120 }))
})

t.test('tiles overlap when their 200 × 120 rectangles share area; touching edges do not', async (t) => {
  t.ok(tilesOverlap({ x: 0, y: 0 }, { x: 199, y: 119 }))
  t.notOk(tilesOverlap({ x: 0, y: 0 }, { x: 200, y: 0 }), 'side by side')
  t.notOk(tilesOverlap({ x: 0, y: 0 }, { x: 0, y: 120 }), 'stacked')
  t.ok(tilesOverlap({ x: 0, y: 0 }, { x: -199, y: -119 }))
  t.notOk(tilesOverlap({ x: 0, y: 0 }, { x: 100, y: 120 }))
})

t.test('the spatial index finds exactly the overlapping tiles', async (t) => {
  const tiles: TilePosition[] = []
  for (let i = 0; i < 300; i++) tiles.push({ tileId: `t${i}`, x: ((i * 7919) % 3000) - 1500, y: ((i * 104729) % 2000) - 1000 })
  const index = new TileIndex()
  for (const tile of tiles) index.add(tile)
  for (const probe of [{ tileId: 'p', x: 0, y: 0 }, { tileId: 'p', x: -1420, y: 333 }, { tileId: 't5', x: tiles[5]?.x ?? 0, y: tiles[5]?.y ?? 0 }]) {
    const expected = tiles.filter((o) => o.tileId !== probe.tileId && tilesOverlap(o, probe)).map((o) => o.tileId).sort()
    t.same(index.overlapping(probe).map((o) => o.tileId).sort(), expected)
    t.equal(index.isFree(probe), expected.length === 0)
  }
  t.equal(countOverlappingPairs(tiles), bruteIssues(tiles).filter((i) => i.kind === 'overlap').length, 'the pair count equals the pairwise check')
})

/** Every issue by the O(n²) definition, in issue order: what the bounded validation must agree with. */
function bruteIssues (tiles: readonly TilePosition[]): Array<{ kind: string, tileIds: string[] }> {
  const all: Array<{ kind: string, tileIds: string[] }> = []
  for (const a of tiles) if (!isOnGrid(a)) all.push({ kind: 'off-grid', tileIds: [a.tileId] })
  for (let i = 0; i < tiles.length; i++) {
    for (let j = i + 1; j < tiles.length; j++) {
      const a = tiles[i] as TilePosition
      const b = tiles[j] as TilePosition
      if (tilesOverlap(a, b)) all.push({ kind: 'overlap', tileIds: [a.tileId, b.tileId].sort() })
    }
  }
  // Ids here hold no character below '0', so joining with a space sorts as the element-wise order.
  const key = (ids: string[]): string => ids.join(' ')
  return all.sort((p, q) => key(p.tileIds) < key(q.tileIds) ? -1 : key(p.tileIds) > key(q.tileIds) ? 1 : 0)
}

t.test('layout findings: issues in tileIds order (a tile\'s off-grid issue before its overlaps), capped, with the exact count', async (t) => {
  t.same(layoutFindings([]), { issues: [], issueCount: 0, truncated: false })
  t.same(layoutFindings([{ tileId: 'a', x: 0, y: 0 }, { tileId: 'b', x: 200, y: 0 }]), { issues: [], issueCount: 0, truncated: false }, 'touching edges do not overlap')
  const tiles = [
    { tileId: 'c', x: 10, y: 0 },
    { tileId: 'b', x: 100, y: 60 },
    { tileId: 'a', x: 0, y: 0 },
    { tileId: 'z', x: 1000, y: 1000 },
    { tileId: 'y', x: 1000.5, y: 1000 }
  ]
  const all = [
    { kind: 'overlap', tileIds: ['a', 'b'] },
    { kind: 'overlap', tileIds: ['a', 'c'] },
    { kind: 'overlap', tileIds: ['b', 'c'] },
    { kind: 'off-grid', tileIds: ['c'] },
    { kind: 'off-grid', tileIds: ['y'] },
    { kind: 'overlap', tileIds: ['y', 'z'] }
  ]
  t.same(layoutFindings(tiles), { issues: all, issueCount: 6, truncated: false })
  t.same(bruteIssues(tiles), all, 'the order is the brute-force list sorted by tileIds')
  t.same(layoutFindings(tiles, 4), { issues: all.slice(0, 4), issueCount: 6, truncated: true }, 'the first 4, the count of all')
  t.same(firstIssues(tiles, 0), [])
})

t.test('1,000 tiles on one spot: 100 issues in id order, 499,500 pairs counted', async (t) => {
  const ids = Array.from({ length: 1000 }, (_, i) => `t${i.toString().padStart(4, '0')}`)
  const stacked = [...ids].reverse().map((tileId) => ({ tileId, x: 0, y: 0 }))
  const findings = layoutFindings(stacked)
  t.equal(findings.issueCount, 1000 * 999 / 2)
  t.equal(findings.truncated, true)
  t.same(findings.issues, ids.slice(1, 101).map((other) => ({ kind: 'overlap', tileIds: ['t0000', other] })))
  const offGrid = ids.map((tileId) => ({ tileId, x: 5, y: 5 }))
  const mixed = layoutFindings(offGrid)
  t.equal(mixed.issueCount, 1000 + 1000 * 999 / 2, 'one off-grid issue per tile and one per pair')
  t.same(mixed.issues.slice(0, 2), [{ kind: 'off-grid', tileIds: ['t0000'] }, { kind: 'overlap', tileIds: ['t0000', 't0001'] }])
  t.equal(mixed.issues.length, 100)
})

t.test('the exact count and the first 100 agree with the pairwise check on random layouts', async (t) => {
  let seed = 7
  const random = (): number => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648 }
  // Dense, sparse, clustered, off-grid fractions and distances of exactly one tile width or height
  // (which do not overlap), negative coordinates and -0.
  const shapes: Array<(i: number) => { x: number, y: number }> = [
    () => ({ x: Math.floor(random() * 40) * 20, y: Math.floor(random() * 40) * 20 }),
    () => ({ x: random() * 8000 - 4000, y: random() * 6000 - 3000 }),
    (i) => ({ x: (i % 3) * 200 + (random() < 0.5 ? 0 : -0), y: Math.floor(random() * 6) * 120 }),
    () => ({ x: Math.round(random() * 1200) / 3 - 200, y: Math.round(random() * 720) / 7 - 100 }),
    (i) => ({ x: i % 2 === 0 ? 0.1 : 200.1, y: random() < 0.5 ? 0.3 : 120.3 })
  ]
  for (const [n, shape] of shapes.entries()) {
    for (const size of [2, 37, 300]) {
      const tiles = Array.from({ length: size }, (_, i) => ({ tileId: `s${Math.floor(random() * 1e9).toString(36)}_${i}`, ...shape(i) }))
      const brute = bruteIssues(tiles)
      const findings = layoutFindings(tiles)
      t.equal(findings.issueCount, brute.length, `shape ${n}, ${size} tiles: ${brute.length} issues`)
      t.same(findings.issues, brute.slice(0, 100), `shape ${n}, ${size} tiles: the first 100 in order`)
      t.equal(findings.truncated, brute.length > 100)
    }
  }
})

const fiftyIds = Array.from({ length: 50 }, (_, i) => `spark_${(i * 37 % 50).toString().padStart(2, '0')}_x`)

t.test('force-directed layout of 50 tiles: on the grid, no overlaps, depends only on the set of ids', async (t) => {
  const layout = forceDirectedLayout(fiftyIds)
  t.equal(layout.length, 50)
  t.same(layout.map((p) => p.tileId), [...fiftyIds].sort(), 'one position per id, in id order')
  t.ok(layout.every(isOnGrid), 'every tile is on the grid')
  noOverlaps(t, layout)
  t.same(forceDirectedLayout(fiftyIds), layout, 'same result twice')
  t.same(forceDirectedLayout([...fiftyIds].reverse()), layout, 'same result for the ids in another order')
  t.same(forceDirectedLayout([...fiftyIds, fiftyIds[0] as string]), layout, 'duplicates do not change the set')
  t.notSame(forceDirectedLayout([...fiftyIds.slice(1), 'spark_other']), layout, 'another set gives another layout')
  t.equal(Math.min(...layout.map((p) => p.x)), 0, 'anchored at the origin')
  t.equal(Math.min(...layout.map((p) => p.y)), 0)
  const width = Math.max(...layout.map((p) => p.x)) + TILE_WIDTH
  const height = Math.max(...layout.map((p) => p.y)) + TILE_HEIGHT
  t.ok(width * height < 50 * TILE_WIDTH * TILE_HEIGHT * 6, `compact: ${width} × ${height}`)
})

t.test('force-directed layout of 0, 1 and 2 tiles', async (t) => {
  t.same(forceDirectedLayout([]), [])
  t.same(forceDirectedLayout(['only']), [{ tileId: 'only', x: 0, y: 0 }])
  const two = forceDirectedLayout(['a', 'b'])
  t.equal(two.length, 2)
  t.notOk(tilesOverlap(two[0] as TilePosition, two[1] as TilePosition))
})

t.test('grid layout: rows of ceil(√n), one grid step apart', async (t) => {
  const layout = gridLayout(['d', 'a', 'c', 'b', 'e'])
  t.same(layout, [
    { tileId: 'a', x: 0, y: 0 },
    { tileId: 'b', x: 220, y: 0 },
    { tileId: 'c', x: 440, y: 0 },
    { tileId: 'd', x: 0, y: 140 },
    { tileId: 'e', x: 220, y: 140 }
  ])
  t.same(computeLayout('grid', fiftyIds).length, 50)
  t.ok(computeLayout('grid', fiftyIds).every(isOnGrid))
  noOverlaps(t, computeLayout('grid', fiftyIds))
})

t.test('pagination: totalPages = ceil(total / limit), 0 when empty; defaults page 1, limit 20', async (t) => {
  t.same(pageWindow({}), { page: 1, limit: 20, offset: 0 })
  t.same(pageWindow({ page: 3, limit: 100 }), { page: 3, limit: 100, offset: 200 })
  t.same(paginationOf({ page: 1, limit: 20 }, 0), { page: 1, limit: 20, total: 0, totalPages: 0 })
  t.same(paginationOf({ page: 1, limit: 20 }, 20), { page: 1, limit: 20, total: 20, totalPages: 1 })
  t.same(paginationOf({ page: 9, limit: 20 }, 21), { page: 9, limit: 20, total: 21, totalPages: 2 })
})
