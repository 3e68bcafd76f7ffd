// Canvas operations (DECISIONS §6): move one tile, move many atomically, compute and validate a
// layout, read the canvas state. Geometry is in grid.ts, layout algorithms in layout.ts (run off the
// event loop through deps.compute).
import type { Actor } from '../actor.js'
import type { CoreDeps } from '../deps.js'
import { notFound, validationError } from '../errors.js'
import { loadVisibleRoom, requireVisible, requireVisibleTile } from '../rooms/room-access.js'
import { joinRoom } from '../rooms/room-members.repository.js'
import { lockRoomsForShare } from '../rooms/rooms.repository.js'
import { inTransaction } from '../transaction.js'
import { parseInput } from '../validation.js'
import * as repo from './canvas.repository.js'
import {
  BatchUpdatePositionsInput, CanvasStateQuery, ComputeLayoutInput, RoomIdInput, UpdatePositionInput,
  type CanvasState, type LayoutResult, type LayoutValidation, type PositionResult, type TilePosition
} from './canvas.types.js'
import { GRID_SIZE, TILE_HEIGHT, TILE_WIDTH, TileIndex, compare, layoutIssues, snapPosition } from './grid.js'
import { moveTile } from './tile-move.js'

const byTileId = (a: TilePosition, b: TilePosition): number => compare(a.tileId, b.tileId)

function sameIds (a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false
  const sortedA = [...a].sort(compare)
  const sortedB = [...b].sort(compare)
  return sortedA.every((id, i) => id === sortedB[i])
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
        await repo.setTilePositions(trx, snapped, now)
        const roomOf = new Map(ids.map((id) => [id, (tiles.get(id) as repo.TileRoom).room_id]))
        const indexes = new Map<string, TileIndex>()
        for (const roomId of roomIds) {
          await joinRoom(trx, roomId, actor.userId, now)
          const index = new TileIndex()
          for (const tile of await repo.tilePositions(trx, roomId)) index.add(tile)
          indexes.set(roomId, index)
        }
        const positions = snapped.map(({ tileId, x, y, snapped }): PositionResult => ({
          tileId, x, y, snapped, collisionDetected: !(indexes.get(roomOf.get(tileId) ?? '') as TileIndex).isFree({ tileId, x, y })
        }))
        const perRoom = new Map<string, TilePosition[]>()
        for (const { tileId, x, y } of positions) {
          const roomId = roomOf.get(tileId) as string
          perRoom.set(roomId, [...perRoom.get(roomId) ?? [], { tileId, x, y }])
        }
        for (const [roomId, moved] of perRoom) {
          publish('positions:batch-updated', { updates: moved }, { audience: { kind: 'room', roomId }, userId: actor.userId })
        }
        return { positions }
      })
    },

    /** Lays the room out (result depends only on its tile ids), persists it, publishes `layout:computed`. */
    async computeLayout (actor: Actor, input: unknown): Promise<LayoutResult> {
      const { roomId, algorithm } = parseInput(ComputeLayoutInput, input)
      await loadVisibleRoom(db, actor, roomId)
      // Computed (in the worker pool) before the transaction so locks are not held meanwhile.
      let ids = await repo.tileIdsInRoom(db, roomId)
      let positions = await compute.layout(algorithm, ids)
      const now = clock.now()
      return await inTransaction(deps, async ({ trx, publish }) => {
        await loadVisibleRoom(trx, actor, roomId, 'share')
        const locked = await repo.lockRoomTiles(trx, roomId)
        if (!sameIds(locked, ids)) {
          ids = locked // tiles were added or removed meanwhile: lay out what is there now
          positions = await compute.layout(algorithm, ids)
        }
        await repo.setTilePositions(trx, positions, now)
        await joinRoom(trx, roomId, actor.userId, now)
        const result = { roomId, positions }
        publish('layout:computed', result, { audience: { kind: 'room', roomId }, userId: actor.userId })
        return result
      })
    },

    /** Reports off-grid tiles and overlapping pairs; publishes `layout:validated`. */
    async validateLayout (actor: Actor, input: unknown): Promise<LayoutValidation> {
      const { roomId } = parseInput(RoomIdInput, input)
      return await inTransaction(deps, async ({ trx, publish }) => {
        await loadVisibleRoom(trx, actor, roomId)
        await joinRoom(trx, roomId, actor.userId, clock.now())
        const issues = layoutIssues(await repo.tilePositions(trx, roomId))
        const result = { roomId, valid: issues.length === 0, issues }
        publish('layout:validated', result, { audience: { kind: 'room', roomId }, userId: actor.userId })
        return result
      })
    },

    /** Opening a canvas makes the caller a member of its room (DECISIONS §5). */
    async getState (actor: Actor, input: unknown): Promise<CanvasState> {
      const { roomId } = parseInput(CanvasStateQuery, input)
      await loadVisibleRoom(db, actor, roomId)
      await joinRoom(db, roomId, actor.userId, clock.now())
      const tiles = (await repo.tilePositions(db, roomId)).sort(byTileId)
      return { roomId, gridSize: GRID_SIZE, tileWidth: TILE_WIDTH, tileHeight: TILE_HEIGHT, tiles }
    }
  }
}

export type Canvas = ReturnType<typeof createCanvas>
