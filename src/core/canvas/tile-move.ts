// Moving one tile, shared by CanvasService.UpdatePosition and SparksService.MoveSpark so both
// snap, detect collisions, bump the version and publish `position:updated` identically.
import type { Actor } from '../actor.js'
import type { CoreDeps } from '../deps.js'
import { notFound } from '../errors.js'
import { loadVisibleRoom, requireVisibleTile } from '../rooms/room-access.js'
import { joinRoom } from '../rooms/room-members.repository.js'
import { findSparkWithRoom, type SparkRow } from '../sparks/sparks.repository.js'
import { setTilePosition, tilePositions } from './canvas.repository.js'
import type { PositionResult } from './canvas.types.js'
import { collides, snapPosition } from './grid.js'
import { inTransaction } from '../transaction.js'

export interface TileMove {
  spark: SparkRow
  position: PositionResult
}

/** `what` names the tile in a not-found error: "Tile" on the canvas, "Spark" for MoveSpark. */
export async function moveTile (deps: CoreDeps, actor: Actor, move: { tileId: string, x: number, y: number }, what: 'Tile' | 'Spark'): Promise<TileMove> {
  const { clock } = deps
  const { x, y, snapped } = snapPosition(move)
  const now = clock.now()
  return await inTransaction(deps, async ({ trx, publish }) => {
    const tile = requireVisibleTile(await findSparkWithRoom(trx, move.tileId), actor, what)
    // Holds the room as it is (visible) until commit: a concurrent delete or switch to private waits.
    await loadVisibleRoom(trx, actor, tile.room_id, 'share')
    await joinRoom(trx, tile.room_id, actor.userId, now)
    // Collisions are with the other tiles of the room, so they may be read before the move.
    const collisionDetected = collides({ tileId: tile.id, x, y }, await tilePositions(trx, tile.room_id))
    // One UPDATE, last before commit: concurrent moves of the same tile serialise on its row (none
    // is lost) and hold that lock only for this statement and the commit.
    const spark = await setTilePosition(trx, tile.id, x, y, now)
    if (spark === undefined) throw notFound(what)
    const position = { tileId: spark.id, x, y, snapped, collisionDetected }
    publish('position:updated', position, { audience: { kind: 'room', roomId: spark.room_id }, userId: actor.userId })
    return { spark, position }
  })
}
