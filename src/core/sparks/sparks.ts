// Spark operations: list a room's sparks, get, create, edit (optimistic concurrency), delete, move.
// Every write publishes its SPEC event in its own transaction.
import type { Actor } from '../actor.js'
import type { CoreDeps } from '../deps.js'
import { AppError, notFound, validationError } from '../errors.js'
import { pageWindow, paginationOf, type Page } from '../pagination.js'
import { loadVisibleRoom, requireSparkEditor, requireVisibleTile } from '../rooms/room-access.js'
import { joinRoom } from '../rooms/room-members.repository.js'
import { moveTile } from '../canvas/tile-move.js'
import { MAX_TILES_PER_ROOM, TILE_LIMIT_MESSAGE } from '../canvas/tile-limit.js'
import type { PositionResult } from '../canvas/canvas.types.js'
import { inTransaction } from '../transaction.js'
import { keyed, ONE_TRANSACTION } from '../idempotency/keyed-call.js'
import { parseInput } from '../validation.js'
import { newId } from '../../infra/ids.js'
import type { Db } from '../../db/database.js'
import * as repo from './sparks.repository.js'
import { CreateSparkInput, ListSparksQuery, MoveSparkInput, SparkIdParams, UpdateSparkInput, toSpark, type Spark } from './sparks.types.js'

/** The spark and its room, locked for a change: not_found unless the caller may see the room. */
async function lockVisibleSpark (trx: Db, actor: Actor, sparkId: string): Promise<{ spark: repo.SparkRow, room: { created_by: string } }> {
  const found = requireVisibleTile(await repo.findSparkWithRoom(trx, sparkId), actor, 'Spark')
  const room = await loadVisibleRoom(trx, actor, found.room_id, 'share')
  const spark = await repo.findSparkForUpdate(trx, sparkId)
  if (spark === undefined) throw notFound('Spark')
  return { spark, room }
}

export function createSparks (deps: CoreDeps) {
  const { db, clock } = deps

  return {
    /** Reading a room's sparks makes the caller a member of the room (DECISIONS §5). */
    async list (actor: Actor, input: unknown): Promise<Page<Spark>> {
      const query = parseInput(ListSparksQuery, input)
      await loadVisibleRoom(db, actor, query.roomId)
      await joinRoom(db, query.roomId, actor.userId, clock.now())
      const window = pageWindow(query)
      const { rows, total } = await repo.listSparksInRoom(db, query.roomId, actor.userId, window)
      return { items: rows.map(toSpark), pagination: paginationOf(window, total) }
    },

    async get (actor: Actor, input: unknown): Promise<Spark> {
      const { sparkId } = parseInput(SparkIdParams, input)
      return toSpark(requireVisibleTile(await repo.findSparkWithRoom(db, sparkId), actor, 'Spark'))
    },

    /**
     * Any signed-in user who can see the room, while it holds fewer than MAX_TILES_PER_ROOM sparks
     * (then `limit_reached`). The position is stored as given (moves snap).
     */
    create: keyed(deps, async (actor: Actor, input: unknown): Promise<Spark> => {
      const { title, content, roomId, x, y } = parseInput(CreateSparkInput, input)
      const now = clock.now()
      return await inTransaction(deps, async ({ trx, publish }) => {
        await loadVisibleRoom(trx, actor, roomId, 'share')
        // Counted under the lock: two creators racing for the last place cannot both take it.
        await repo.lockSparkCreation(trx, roomId)
        if (await repo.countSparksInRoom(trx, roomId) >= MAX_TILES_PER_ROOM) throw new AppError('limit_reached', TILE_LIMIT_MESSAGE)
        const spark = toSpark(await repo.insertSpark(trx, { id: newId('spark'), roomId, title, content: content ?? '', x, y, createdBy: actor.userId, now }))
        await joinRoom(trx, roomId, actor.userId, now)
        publish('spark:created', spark, { audience: { kind: 'room', roomId, sparkId: spark.id }, userId: actor.userId })
        return spark
      })
    }, ONE_TRANSACTION),

    /**
     * Title/content, by the spark's creator or the room's creator. With `expectedVersion` the edit
     * applies only to that version; a newer one means someone else changed it first: `aborted`.
     */
    async update (actor: Actor, input: unknown): Promise<Spark> {
      const { sparkId, title, content, expectedVersion } = parseInput(UpdateSparkInput, input)
      if (title === undefined && content === undefined) throw validationError('(body)', 'must contain at least one of title, content')
      const now = clock.now()
      return await inTransaction(deps, async ({ trx, publish }) => {
        const { spark: current, room } = await lockVisibleSpark(trx, actor, sparkId)
        requireSparkEditor(current, room, actor, 'edit')
        if (expectedVersion !== undefined && current.version !== expectedVersion) {
          throw new AppError('stale_version', `The spark was changed meanwhile: it is at version ${current.version}, not ${expectedVersion}. Reload it and try again.`)
        }
        const spark = toSpark(await repo.updateSparkText(trx, sparkId, { title, content }, now))
        await joinRoom(trx, current.room_id, actor.userId, now)
        publish('spark:updated', spark, { audience: { kind: 'room', roomId: spark.roomId, sparkId: spark.id }, userId: actor.userId })
        return spark
      })
    },

    /** By the spark's creator or the room's creator. */
    async delete (actor: Actor, input: unknown): Promise<void> {
      const { sparkId } = parseInput(SparkIdParams, input)
      const now = clock.now()
      await inTransaction(deps, async ({ trx, publish }) => {
        const { spark, room } = await lockVisibleSpark(trx, actor, sparkId)
        requireSparkEditor(spark, room, actor, 'delete')
        await repo.deleteSparkRow(trx, sparkId)
        await joinRoom(trx, spark.room_id, actor.userId, now)
        publish('spark:deleted', { id: sparkId, roomId: spark.room_id, version: spark.version }, { audience: { kind: 'room', roomId: spark.room_id, sparkId }, userId: actor.userId })
      })
    },

    /** Any signed-in user who can see the room moves any spark: snapped, collision-checked, `position:updated`. */
    async move (actor: Actor, input: unknown): Promise<{ spark: Spark, position: PositionResult }> {
      const { sparkId, x, y } = parseInput(MoveSparkInput, input)
      const { spark, position } = await moveTile(deps, actor, { tileId: sparkId, x, y }, 'Spark')
      return { spark: toSpark(spark), position }
    }
  }
}

export type Sparks = ReturnType<typeof createSparks>
