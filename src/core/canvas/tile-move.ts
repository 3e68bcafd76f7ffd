// Moving one tile, shared by CanvasService.UpdatePosition and SparksService.MoveSpark so both
// snap, detect collisions, bump the version and publish `position:updated` (with that version) identically.
import type { Actor } from '../actor.js'
import type { CoreDeps } from '../deps.js'
import { notFound } from '../errors.js'
import { requireVisibleTile } from '../rooms/room-access.js'
import { joinRoom } from '../rooms/room-members.repository.js'
import type { SparkRow } from '../sparks/sparks.repository.js'
import { lockTileToMove, setTilePositionLogged } from './canvas.repository.js'
import type { PositionResult } from './canvas.types.js'
import { snapPosition } from './grid.js'
import { inTransaction } from '../transaction.js'
import type { Audience, EventMap, EventType } from '../events.js'

export interface TileMove {
  spark: SparkRow
  position: PositionResult
}

/** `what` names the tile in a not-found error: "Tile" on the canvas, "Spark" for MoveSpark. */
export async function moveTile (deps: CoreDeps, actor: Actor, move: { tileId: string, x: number, y: number }, what: 'Tile' | 'Spark'): Promise<TileMove> {
  const { clock } = deps
  const { x, y, snapped } = snapPosition(move)
  const now = clock.now()
  return await inTransaction(deps, async ({ trx, wroteEvent }) => {
    // Collisions are with the other tiles of the room, so they are read before the move, with it.
    const tile = requireVisibleTile(await lockTileToMove(trx, move.tileId, actor.userId, { x, y }), actor, what)
    if (!tile.mover_is_member) await joinRoom(trx, tile.room_id, actor.userId, now)
    const moved = { tileId: tile.id, x, y, snapped, collisionDetected: tile.target_collides }
    // The event of a tile everyone sees goes to the whole room, so its collision flag counts only
    // tiles everyone sees: the mover's own hidden tile is theirs to collide with, not to reveal. A
    // hidden tile's event reaches its creator, the mover, alone.
    const told = tile.hidden_at === null ? { ...moved, collisionDetected: tile.target_collides_openly } : moved
    // The UPDATE and its event (`position:updated` with the version the UPDATE gives the spark) last
    // before commit, in one statement: concurrent moves of the same tile serialise on its row (none
    // is lost) and hold that lock only for this statement and the commit.
    const event = {
      type: 'position:updated' satisfies EventType,
      payload: told satisfies Omit<EventMap['position:updated'], 'version'>,
      audience: { kind: 'room', roomId: tile.room_id, sparkId: tile.id } satisfies Audience,
      userId: actor.userId
    }
    const spark = await setTilePositionLogged(trx, tile.id, x, y, now, event)
    if (spark === undefined) throw notFound(what)
    wroteEvent()
    const position: PositionResult = { ...moved, version: spark.version }
    return { spark, position }
  })
}
