// What a report or a moderation action is about (DECISIONS §11): a room, spark, shelf, office or
// user. Whether the reporter may see it is asked of each domain's own visibility rule (room-access.ts,
// shelves.ts `readable`, office-access.ts), so a report never reveals what the reporter could not
// open. Hiding and unhiding write `hidden_at`, which those same rules read.
import type { Actor } from '../actor.js'
import type { Db } from '../../db/database.js'
import type { ReportTargetType } from '../../db/schema.js'
import { AppError, notFound } from '../errors.js'
import { requireReadable } from '../offices/office-access.js'
import { findOfficeWithRole } from '../offices/offices.repository.js'
import { canSeeRoom, canSeeTile } from '../rooms/room-access.js'
import { findRoom } from '../rooms/rooms.repository.js'
import { visibleMemberIds } from '../rooms/room-members.repository.js'
import { toRoom } from '../rooms/rooms.types.js'
import { readable } from '../shelves/shelves.js'
import { findShelf } from '../shelves/shelves.repository.js'
import { findSparkWithRoom } from '../sparks/sparks.repository.js'
import { toSpark } from '../sparks/sparks.types.js'
import type { Transaction } from '../transaction.js'
import { findUserById } from '../users/users.repository.js'

export interface Target {
  type: ReportTargetType
  id: string
  /** Whom an action on it affects: the item's owner (an office's creator), or the user. */
  ownerId: string
  /** Text a classifier may read (a name, a title and content); empty when there is none. */
  text: string
}

const NOT_FOUND = 'Target'

/** The target as the actor may see it; not_found when it is missing or invisible to them. */
export async function visibleTarget (db: Db, actor: Actor, type: ReportTargetType, id: string): Promise<Target> {
  switch (type) {
    case 'room': {
      const room = await findRoom(db, id)
      if (room === undefined || !canSeeRoom(room, actor)) throw notFound(NOT_FOUND)
      return { type, id, ownerId: room.created_by, text: `${room.name}\n${room.description ?? ''}` }
    }
    case 'spark': {
      const spark = await findSparkWithRoom(db, id)
      if (spark === undefined || !canSeeTile(spark, actor)) throw notFound(NOT_FOUND)
      return { type, id, ownerId: spark.created_by, text: `${spark.title}\n${spark.content}` }
    }
    case 'shelf': {
      const shelf = await findShelf(db, id)
      try {
        readable(shelf, actor)
      } catch {
        throw notFound(NOT_FOUND)
      }
      return { type, id, ownerId: shelf?.owner_id ?? '', text: `${shelf?.name ?? ''}\n${shelf?.description ?? ''}` }
    }
    case 'office': {
      const office = await findOfficeWithRole(db, id, actor.userId)
      try {
        requireReadable(office, actor)
      } catch {
        throw notFound(NOT_FOUND)
      }
      return { type, id, ownerId: office?.created_by ?? '', text: `${office?.name ?? ''}\n${office?.description ?? ''}` }
    }
    case 'user': {
      const user = await findUserById(db, id)
      if (user === undefined) throw notFound(NOT_FOUND)
      return { type, id, ownerId: user.id, text: user.display_name }
    }
  }
}

/** The target in whatever state (admins see everything); not_found when it no longer exists. */
export async function anyTarget (db: Db, type: ReportTargetType, id: string): Promise<Target> {
  switch (type) {
    case 'room': {
      const room = await findRoom(db, id)
      if (room === undefined) throw notFound(NOT_FOUND)
      return { type, id, ownerId: room.created_by, text: room.name }
    }
    case 'spark': {
      const spark = await findSparkWithRoom(db, id)
      if (spark === undefined) throw notFound(NOT_FOUND)
      return { type, id, ownerId: spark.created_by, text: spark.title }
    }
    case 'shelf': {
      const shelf = await findShelf(db, id)
      if (shelf === undefined) throw notFound(NOT_FOUND)
      return { type, id, ownerId: shelf.owner_id, text: shelf.name }
    }
    case 'office': {
      const office = await findOfficeWithRole(db, id, null)
      if (office === undefined) throw notFound(NOT_FOUND)
      return { type, id, ownerId: office.created_by, text: office.name }
    }
    case 'user': {
      const user = await findUserById(db, id)
      if (user === undefined) throw notFound(NOT_FOUND)
      return { type, id, ownerId: user.id, text: user.display_name }
    }
  }
}

export function isHideable (type: ReportTargetType): type is 'room' | 'spark' | 'shelf' {
  return type === 'room' || type === 'spark' || type === 'shelf'
}

/**
 * Hides (`at`) or shows again (`null`) a room, spark or shelf, in the caller's transaction. Members
 * who lose sight of a room or spark are told as if it were deleted (`room:deleted`, `spark:deleted`),
 * and told it is back when it is shown again (`room:updated`, `spark:created`), so open canvases
 * follow; the owner, who keeps seeing it, is told nothing. A shelf's events go to its owner only.
 */
export async function setHidden (tx: Transaction, type: ReportTargetType, id: string, at: Date | null): Promise<void> {
  const { trx, publish } = tx
  if (type === 'room') {
    const before = at === null ? [] : await visibleMemberIds(trx, id)
    const row = await trx.updateTable('rooms').set({ hidden_at: at }).where('id', '=', id).returningAll().executeTakeFirst()
    if (row === undefined) throw notFound(NOT_FOUND)
    if (at !== null) {
      const others = before.filter((userId) => userId !== row.created_by)
      if (others.length > 0) publish('room:deleted', { id }, { audience: { kind: 'users', userIds: others } })
    } else {
      publish('room:updated', toRoom(row), { audience: { kind: 'room', roomId: id } })
    }
    return
  }
  if (type === 'spark') {
    const row = await trx.updateTable('sparks').set({ hidden_at: at }).where('id', '=', id).returningAll().executeTakeFirst()
    if (row === undefined) throw notFound(NOT_FOUND)
    if (at !== null) {
      const others = (await visibleMemberIds(trx, row.room_id)).filter((userId) => userId !== row.created_by)
      if (others.length > 0) publish('spark:deleted', { id, roomId: row.room_id, version: row.version }, { audience: { kind: 'users', userIds: others } })
    } else {
      publish('spark:created', toSpark(row), { audience: { kind: 'room', roomId: row.room_id, sparkId: id } })
    }
    return
  }
  if (type === 'shelf') {
    const row = await trx.updateTable('shelves').set({ hidden_at: at }).where('id', '=', id).returning('id').executeTakeFirst()
    if (row === undefined) throw notFound(NOT_FOUND)
    return
  }
  throw new AppError('precondition', `A ${type} cannot be hidden; only a room, spark or shelf can.`)
}
