// Canvas operations (DECISIONS §6): move one tile, move many atomically, compute and validate a
// layout, read the canvas state. Geometry is in grid.ts, layout algorithms in layout.ts (run off the
// event loop through deps.compute). Every tile state these answer and publish carries the spark's
// version (canvas.types.ts `TileState`).
import type { Actor } from '../actor.js'
import type { CoreDeps } from '../deps.js'
import { AppError, notFound, validationError } from '../errors.js'
import { loadVisibleRoom, requireVisible, requireVisibleTile } from '../rooms/room-access.js'
import { joinRoom } from '../rooms/room-members.repository.js'
import { lockRoomsForShare } from '../rooms/rooms.repository.js'
import { inTransaction } from '../transaction.js'
import { parseInput } from '../validation.js'
import * as repo from './canvas.repository.js'
import {
  BatchUpdatePositionsInput, CanvasStateQuery, ComputeLayoutInput, RoomIdInput, UpdatePositionInput,
  type CanvasState, type LayoutResult, type LayoutValidation, type PositionResult, type TilePosition, type TileState
} from './canvas.types.js'
import { GRID_SIZE, TILE_HEIGHT, TILE_WIDTH, TileIndex, compare, snapPosition } from './grid.js'
import { layoutFindings } from './layout-issues.js'
import { moveTile } from './tile-move.js'

const byTileId = (a: TilePosition, b: TilePosition): number => compare(a.tileId, b.tileId)

/**
 * How many times a layout is written before it gives up: each attempt after the first means the
 * room's tiles changed between the read its layout was computed from and the write.
 */
export const LAYOUT_ATTEMPTS = 5

/** Both in id order (the repository's). */
function sameIds (a: readonly repo.TileVersion[], b: readonly repo.TileVersion[]): boolean {
  return a.length === b.length && a.every((tile, i) => tile.id === b[i]?.id)
}

function sameVersions (a: readonly repo.TileVersion[], b: readonly repo.TileVersion[]): boolean {
  return sameIds(a, b) && a.every((tile, i) => tile.version === b[i]?.version)
}

export function createCanvas (deps: CoreDeps) {
  const { db, clock, compute } = deps

  return {
    async updatePosition (actor: Actor, input: unknown): Promise<PositionResult> {
      const move = parseInput(UpdatePositionInput, input)
      return (await moveTile(deps, actor, move, 'Tile')).position
    },

    /**
     * All or none: every tile is checked (exists, in a room the caller may see) and locked before
     * any moves, and all moves are one statement in one transaction. One `positions:batch-updated`
     * per room touched, in request order.
     */
    async batchUpdatePositions (actor: Actor, input: unknown): Promise<{ positions: PositionResult[] }> {
      const { updates } = parseInput(BatchUpdatePositionsInput, input)
      const firstIndex = new Map<string, number>()
      updates.forEach((u, i) => {
        if (firstIndex.has(u.tileId)) throw validationError(`updates[${i}].tileId`, 'appears more than once in the batch')
        firstIndex.set(u.tileId, i)
      })
      const ids = updates.map((u) => u.tileId)
      const now = clock.now()
      return await inTransaction(deps, async ({ trx, publish }) => {
        const tiles = new Map((await repo.findTileRooms(trx, ids)).map((t) => [t.id, t]))
        updates.forEach((u, i) => { requireVisibleTile(tiles.get(u.tileId), actor, `Tile (updates[${i}].tileId)`) })
        const roomIds = [...new Set([...tiles.values()].map((t) => t.room_id))].sort(compare)
        const rooms = new Map((await lockRoomsForShare(trx, roomIds)).map((r) => [r.id, r]))
        for (const roomId of roomIds) requireVisible(rooms.get(roomId), actor, 'Tile')
        if ((await repo.lockTiles(trx, ids)).length !== ids.length) throw notFound('Tile')

        const snapped = updates.map((u) => ({ tileId: u.tileId, ...snapPosition(u) }))
        const versions = await repo.setTilePositions(trx, snapped, now)
        const roomOf = new Map(ids.map((id) => [id, (tiles.get(id) as repo.TileRoom).room_id]))
        const indexes = new Map<string, TileIndex>()
        for (const roomId of roomIds) {
          await joinRoom(trx, roomId, actor.userId, now)
          const index = new TileIndex()
          // Collisions with the tiles the caller may see: another user's hidden tile is not there for them.
          for (const tile of await repo.tilePositions(trx, roomId, actor.userId)) index.add(tile)
          indexes.set(roomId, index)
        }
        const positions = snapped.map(({ tileId, x, y, snapped }): PositionResult => ({
          tileId,
          x,
          y,
          // Every tile was locked above, so the UPDATE moved each one.
          version: versions.get(tileId) as number,
          snapped,
          collisionDetected: !(indexes.get(roomOf.get(tileId) ?? '') as TileIndex).isFree({ tileId, x, y })
        }))
        const perRoom = new Map<string, TileState[]>()
        for (const { tileId, x, y, version } of positions) {
          const roomId = roomOf.get(tileId) as string
          const moved = perRoom.get(roomId)
          if (moved === undefined) perRoom.set(roomId, [{ tileId, x, y, version }])
          else moved.push({ tileId, x, y, version })
        }
        for (const [roomId, moved] of perRoom) {
          // A hidden tile's move goes to those who may see it (its creator) alone (DECISIONS §11).
          const hidden = moved.filter((m) => tiles.get(m.tileId)?.hidden_at !== null)
          const open = moved.filter((m) => tiles.get(m.tileId)?.hidden_at === null)
          if (open.length > 0) publish('positions:batch-updated', { updates: open }, { audience: { kind: 'room', roomId }, userId: actor.userId })
          for (const tile of hidden) publish('positions:batch-updated', { updates: [tile] }, { audience: { kind: 'room', roomId, sparkId: tile.tileId }, userId: actor.userId })
        }
        return { positions }
      })
    },

    /**
     * Lays the room out (result depends only on its tile ids), persists it, publishes `layout:computed`.
     * The room's tiles are those the caller may see: another user's hidden tile is neither laid out,
     * moved nor answered (DECISIONS §17); the caller's own hidden tiles are, and only they hear where.
     * The layout is computed (in the worker pool) from a read of the room's tiles and their versions,
     * outside any transaction; then a short transaction locks the tiles and writes the layout only if
     * they are still exactly those, at those versions. Otherwise someone moved, added or removed a
     * tile meanwhile: nothing is written, and it starts over from a new read (computing again only
     * when the set of tiles changed), at most LAYOUT_ATTEMPTS times, then `aborted` (409).
     * So no transaction ever waits for the worker pool while it holds rows and delivery back.
     */
    async computeLayout (actor: Actor, input: unknown): Promise<LayoutResult> {
      const { roomId, algorithm } = parseInput(ComputeLayoutInput, input)
      await loadVisibleRoom(db, actor, roomId)
      // Asking for a layout is writing in the room (DECISIONS §5); done first, so the write's
      // transaction, which holds every instance's delivery back while it lasts, is a statement shorter.
      await joinRoom(db, roomId, actor.userId, clock.now())
      let laidOut: { tiles: repo.TileVersion[], positions: TilePosition[] } | undefined
      for (let attempt = 1; attempt <= LAYOUT_ATTEMPTS; attempt++) {
        const tiles = await repo.tileVersionsInRoom(db, roomId, actor.userId)
        if (laidOut === undefined || !sameIds(laidOut.tiles, tiles)) {
          laidOut = { tiles, positions: await compute.layout(algorithm, tiles.map((tile) => tile.id)) }
        } else {
          laidOut.tiles = tiles
        }
        const { positions } = laidOut
        const now = clock.now()
        const written = await inTransaction(deps, async ({ trx, publish }) => {
          await loadVisibleRoom(trx, actor, roomId, 'share')
          const locked = await repo.lockRoomTileVersions(trx, roomId, actor.userId)
          if (!sameVersions(locked, tiles)) return undefined
          const versions = await repo.setTilePositions(trx, positions, now)
          const result = { roomId, positions: positions.map((p) => ({ ...p, version: versions.get(p.tileId) as number })) }
          // The caller's own hidden tiles (as locked: a hide cannot slip in before the commit) are
          // laid out with the rest, but only their creator hears where.
          const hidden = new Set(locked.filter((tile) => tile.hidden).map((tile) => tile.id))
          publish('layout:computed', { roomId, positions: result.positions.filter((p) => !hidden.has(p.tileId)) }, { audience: { kind: 'room', roomId }, userId: actor.userId })
          for (const p of result.positions.filter((q) => hidden.has(q.tileId))) {
            publish('layout:computed', { roomId, positions: [p] }, { audience: { kind: 'room', roomId, sparkId: p.tileId }, userId: actor.userId })
          }
          return result
        })
        if (written !== undefined) return written
      }
      throw new AppError('aborted', `The room's tiles kept changing while its layout was computed (${LAYOUT_ATTEMPTS} attempts); try again.`)
    },

    /**
     * Reports off-grid tiles and overlapping pairs, bounded (layout-issues.ts); publishes
     * `layout:validated`. Read and computed outside any transaction; a short one publishes the event
     * (while the room is still there for the caller). The answer covers the tiles the caller may see
     * (their own hidden ones included); the event goes to the whole room, so it covers the tiles
     * everyone may see: a hidden tile is in no one's validation but its creator's (DECISIONS §17).
     */
    async validateLayout (actor: Actor, input: unknown): Promise<LayoutValidation> {
      const { roomId } = parseInput(RoomIdInput, input)
      await loadVisibleRoom(db, actor, roomId)
      await joinRoom(db, roomId, actor.userId, clock.now())
      const seen = await repo.tileSpots(db, roomId, actor.userId)
      const open = seen.filter((tile) => !tile.hidden)
      const validation = (tiles: readonly TilePosition[]): LayoutValidation => {
        const { issues, issueCount, truncated } = layoutFindings(tiles)
        return { roomId, valid: issueCount === 0, issues, issueCount, truncated }
      }
      const forRoom = validation(open)
      await inTransaction(deps, async ({ trx, publish }) => {
        await loadVisibleRoom(trx, actor, roomId, 'share')
        publish('layout:validated', forRoom, { audience: { kind: 'room', roomId }, userId: actor.userId })
      })
      return open.length === seen.length ? forRoom : validation(seen)
    },

    /** Opening a canvas makes the caller a member of its room (DECISIONS §5). */
    async getState (actor: Actor, input: unknown): Promise<CanvasState> {
      const { roomId } = parseInput(CanvasStateQuery, input)
      await loadVisibleRoom(db, actor, roomId)
      await joinRoom(db, roomId, actor.userId, clock.now())
      const tiles = (await repo.tilePositions(db, roomId, actor.userId)).sort(byTileId)
      return { roomId, gridSize: GRID_SIZE, tileWidth: TILE_WIDTH, tileHeight: TILE_HEIGHT, tiles }
    }
  }
}

export type Canvas = ReturnType<typeof createCanvas>
