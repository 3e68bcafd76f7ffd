// What confirmed account deletion removes (DECISIONS §3). Runs inside the deletion transaction.
// Rows that reference the user with ON DELETE CASCADE (sessions, tokens, links) go with the user row;
// domains whose data must go explicitly add their step here, and report what others must be told.
import type { Db } from '../../db/database.js'
import type { EventBus } from '../events.js'
import { deleteRoomsCreatedBy } from '../rooms/rooms.repository.js'
import { deleteSparksCreatedBy } from '../sparks/sparks.repository.js'
import { deleteUserRow } from './users.repository.js'

/** What went that other users could see: published once the deletion has committed. */
export interface DeletedAccountData {
  rooms: Array<{ roomId: string, memberIds: string[] }>
  sparks: Array<{ id: string, roomId: string }>
}

export async function deleteAccountData (trx: Db, userId: string): Promise<DeletedAccountData> {
  // Their rooms with every spark in them, then their sparks in rooms of others.
  const rooms = await deleteRoomsCreatedBy(trx, userId)
  const sparks = await deleteSparksCreatedBy(trx, userId)
  await deleteUserRow(trx, userId)
  return { rooms, sparks }
}

/** The same events a user deleting each room and spark would have caused, to whoever could see them. */
export async function publishAccountDeletion (bus: EventBus, userId: string, deleted: DeletedAccountData): Promise<void> {
  for (const { roomId, memberIds } of deleted.rooms) {
    if (memberIds.length > 0) await bus.publish('room:deleted', { id: roomId }, { audience: { kind: 'users', userIds: memberIds }, userId })
  }
  for (const { id, roomId } of deleted.sparks) {
    await bus.publish('spark:deleted', { id, roomId }, { audience: { kind: 'room', roomId }, userId })
  }
}
