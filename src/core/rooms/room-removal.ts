// Deleting a room with everything in it: by its creator (rooms.ts) or by a super admin (admin/).
import type { Transaction } from '../transaction.js'
import { deleteSparksInRoom } from '../sparks/sparks.repository.js'
import { deleteRoomMembers, visibleMemberIds } from './room-members.repository.js'
import * as repo from './rooms.repository.js'

/** Runs inside the caller's transaction, the room row already locked for update. `byUserId`: whose
 *  change it is, for the event's origin (undefined for an administrator, who is no user). */
export async function removeRoom ({ trx, publish }: Transaction, roomId: string, byUserId: string | undefined): Promise<void> {
  const members = await visibleMemberIds(trx, roomId)
  await deleteSparksInRoom(trx, roomId)
  await deleteRoomMembers(trx, roomId)
  await repo.deleteRoomRow(trx, roomId)
  // The room no longer exists to resolve a `room` audience: name its members at deletion time.
  publish('room:deleted', { id: roomId }, { audience: { kind: 'users', userIds: members }, userId: byUserId })
}
