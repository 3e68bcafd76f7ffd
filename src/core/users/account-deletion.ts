// What confirmed account deletion removes (DECISIONS §3). Runs inside the deletion transaction.
// Rows that reference the user with ON DELETE CASCADE (sessions, tokens, links) go with the user row;
// domains whose data must go explicitly add their step here, and publish what others must be told.
import type { Transaction } from '../transaction.js'
import { deleteRoomsCreatedBy } from '../rooms/rooms.repository.js'
import { deleteSparksCreatedBy } from '../sparks/sparks.repository.js'
import { deleteUserRow } from './users.repository.js'

/** Deletes the account's data and publishes the same events a user deleting each room and spark
 *  would have caused, to whoever could see them, in the deletion's transaction. */
export async function deleteAccountData ({ trx, publish }: Transaction, userId: string): Promise<void> {
  // Their rooms with every spark in them, then their sparks in rooms of others.
  const rooms = await deleteRoomsCreatedBy(trx, userId)
  const sparks = await deleteSparksCreatedBy(trx, userId)
  await deleteUserRow(trx, userId)
  for (const { roomId, memberIds } of rooms) {
    if (memberIds.length > 0) publish('room:deleted', { id: roomId }, { audience: { kind: 'users', userIds: memberIds }, userId })
  }
  for (const { id, roomId } of sparks) {
    publish('spark:deleted', { id, roomId }, { audience: { kind: 'room', roomId }, userId })
  }
}
