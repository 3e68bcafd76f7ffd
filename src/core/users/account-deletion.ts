// What confirmed account deletion removes (DECISIONS §3). Runs inside the deletion transaction.
// Rows that reference the user with ON DELETE CASCADE (sessions, tokens, links) go with the user row;
// domains whose data must go explicitly add their step here, and publish what others must be told.
import type { Transaction } from '../transaction.js'
import { deleteRoomsCreatedBy } from '../rooms/rooms.repository.js'
import { deleteSparksCreatedBy } from '../sparks/sparks.repository.js'
import { deleteInvitesTo, deleteOfficeRow, lockOfficesOf, membershipsOf, officesOwnedAlone } from '../offices/offices.repository.js'
import { deleteUploadsOwnedBy } from '../uploads/uploads.repository.js'
import { deleteUserRow, findUserById, lockUserRow } from './users.repository.js'

export interface DeletedAccountData {
  /** Storage keys of the user's uploads: their rows are gone in the deletion's transaction; the
   *  caller removes the bytes after the commit, where a storage failure cannot undo the deletion. */
  storageKeys: string[]
}

/** Deletes the account's data and publishes the same events a user deleting each room and spark
 *  would have caused, to whoever could see them, in the deletion's transaction. */
export async function deleteAccountData ({ trx, publish }: Transaction, userId: string): Promise<DeletedAccountData> {
  // First, before any row of theirs is touched: the office lock every membership change takes (§16), so
  // owners counted below are the ones that stay (two owners deleting their accounts at once, or one
  // deleting while the other leaves, never leave an office without an owner).
  await lockOfficesOf(trx, userId)
  // Then the user's row, which uploads and profile changes lock before their upload rows.
  await lockUserRow(trx, userId)
  // Their rooms with every spark in them, then their sparks in rooms of others.
  const rooms = await deleteRoomsCreatedBy(trx, userId)
  const sparks = await deleteSparksCreatedBy(trx, userId)
  // The offices they alone own go whole; in the others their co-members see them leave.
  const ownedAlone = await officesOwnedAlone(trx, userId)
  for (const { officeId, memberIds } of ownedAlone) {
    await deleteOfficeRow(trx, officeId)
    const others = memberIds.filter((id) => id !== userId)
    if (others.length > 0) publish('office:deleted', { id: officeId }, { audience: { kind: 'users', userIds: others }, userId })
  }
  for (const officeId of await membershipsOf(trx, userId)) {
    if (ownedAlone.some((o) => o.officeId === officeId)) continue
    publish('office:member-left', { officeId, userId }, { audience: { kind: 'office', officeId }, userId })
  }
  const storageKeys = await deleteUploadsOwnedBy(trx, userId)
  const user = await findUserById(trx, userId)
  if (user !== undefined) await deleteInvitesTo(trx, user.email)
  // Memberships and the invitations they sent go with the user row (foreign keys).
  await deleteUserRow(trx, userId)
  for (const { roomId, memberIds } of rooms) {
    if (memberIds.length > 0) publish('room:deleted', { id: roomId }, { audience: { kind: 'users', userIds: memberIds }, userId })
  }
  for (const { id, roomId, version } of sparks) {
    publish('spark:deleted', { id, roomId, version }, { audience: { kind: 'room', roomId }, userId })
  }
  return { storageKeys }
}
