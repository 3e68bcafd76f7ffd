// Confirmed account deletion (DECISIONS §3) in bounded steps, each a short transaction: one open
// transaction holds every user's live events back (docs/events.md, *Stalls*), so a deletion never
// holds one longer than a batch, whatever the account owns.
//  1. `markForDeletion`, in the transaction that consumes the deletion token: the user row is
//     marked (`deleting_at`) and every session revoked, so the account can neither act nor sign in
//     again (insertSession refuses a marked user) and nothing new of theirs can be made;
//  2. `completeAccountDeletion`: their offices (the office locks first, in id order, then the user
//     row: the lock order every membership change keeps, so owners counted are the ones that stay),
//     then batches of rooms (each room whole with its sparks and members, so none is ever seen
//     half-deleted), of their sparks in rooms of others, of uploads (bytes removed after each
//     commit), of shelves and of room memberships, and last the user row itself, whose cascade is
//     only what small per-user bounds allow (passport, messages, keys).
// Each batch publishes what it deleted, to whoever could see it, as a user deleting each room and
// spark would have. After each batch the mark is renewed: a mark that has not moved for minutes was
// left by a deletion that did not finish (a restart, an outage), and deletion-resume.ts finishes it.
// Every step is safe to repeat: what it finds gone it skips.
import type { CoreDeps } from '../deps.js'
import { inTransaction, type Transaction } from '../transaction.js'
import type { Db } from '../../db/database.js'
import { deleteInvitesTo, deleteMembershipsOf, deleteOfficeRow, lockOfficesOf, membershipsOf, officesOwnedAlone } from '../offices/offices.repository.js'
import { deleteMembershipsBatch, deleteRoomsCreatedByBatch } from '../rooms/rooms.repository.js'
import { deleteShelvesOwnedByBatch } from '../shelves/shelves.repository.js'
import { deleteSparksCreatedByBatch } from '../sparks/sparks.repository.js'
import { deleteUploadsOwnedByBatch } from '../uploads/uploads.repository.js'
import { removeStoredFiles } from '../uploads/uploads.js'
import { deleteUserRow, lockUserRow } from './users.repository.js'

/** What one batch may take. A room holds at most 1,000 sparks, so a batch of rooms deletes about
 *  this many rows at the most; each other batch deletes at most its count of rows (a shelf brings
 *  its links, at most 500 each). */
export const DELETION_BATCH = { rooms: 50, roomSparks: 1000, sparks: 500, uploads: 200, shelves: 10, memberships: 1000 }

type DeletionDeps = Pick<CoreDeps, 'db' | 'events' | 'storage' | 'log' | 'clock'>

/** Step 1, inside the transaction that consumed the deletion token: marks the account and revokes
 *  its sessions. False when the user is already gone. */
export async function markForDeletion (trx: Db, userId: string, now: Date): Promise<boolean> {
  if (await lockUserRow(trx, userId) === undefined) return false
  await trx.updateTable('users').set({ deleting_at: now }).where('id', '=', userId).execute()
  await trx.updateTable('sessions').set({ revoked_at: now }).where('user_id', '=', userId).where('revoked_at', 'is', null).execute()
  return true
}

/** The mark renewed, in a statement of its own (no batch holds the user row): false once the user
 *  row is gone, when another deletion of the same account finished first. */
async function stillDeleting (deps: DeletionDeps, userId: string): Promise<boolean> {
  const renewed = await deps.db.updateTable('users').set({ deleting_at: deps.clock.now() })
    .where('id', '=', userId).where('deleting_at', 'is not', null)
    .executeTakeFirst()
  return renewed.numUpdatedRows > 0n
}

/**
 * Their offices: the ones they alone own go whole, in the others their co-members see them leave.
 * The office locks first (in id order), then the user row: the lock order of every membership change.
 * False when the user row is gone.
 */
async function leaveOffices ({ trx, publish }: Transaction, userId: string): Promise<boolean> {
  await lockOfficesOf(trx, userId)
  const user = await lockUserRow(trx, userId)
  if (user === undefined) return false
  const deleted = new Set<string>()
  for (const { officeId, memberIds } of await officesOwnedAlone(trx, userId)) {
    await deleteOfficeRow(trx, officeId)
    deleted.add(officeId)
    const others = memberIds.filter((id) => id !== userId)
    if (others.length > 0) publish('office:deleted', { id: officeId }, { audience: { kind: 'users', userIds: others }, userId })
  }
  for (const officeId of await membershipsOf(trx, userId)) {
    if (!deleted.has(officeId)) publish('office:member-left', { officeId, userId }, { audience: { kind: 'office', officeId }, userId })
  }
  await deleteMembershipsOf(trx, userId)
  await deleteInvitesTo(trx, user.email)
  return true
}

/** Runs `batch` (one short transaction each) until it deletes nothing or the deletion is no longer
 *  this one's to finish; false in that case. */
async function inBatches (deps: DeletionDeps, userId: string, batch: () => Promise<number>): Promise<boolean> {
  while (await batch() > 0) {
    if (!await stillDeleting(deps, userId)) return false
  }
  return true
}

/** Steps 2 and after: everything the marked account owns, in batches, then the user row. Safe to
 *  call again on a deletion that stopped part-way. */
export async function completeAccountDeletion (deps: DeletionDeps, userId: string): Promise<void> {
  if (!await inTransaction(deps, async (tx) => await leaveOffices(tx, userId))) return
  const batches: Array<() => Promise<number>> = [
    async () => await inTransaction(deps, async ({ trx, publish }) => {
      const rooms = await deleteRoomsCreatedByBatch(trx, userId, DELETION_BATCH.rooms, DELETION_BATCH.roomSparks)
      for (const { roomId, memberIds } of rooms) {
        if (memberIds.length > 0) publish('room:deleted', { id: roomId }, { audience: { kind: 'users', userIds: memberIds }, userId })
      }
      return rooms.length
    }),
    async () => await inTransaction(deps, async ({ trx, publish }) => {
      const sparks = await deleteSparksCreatedByBatch(trx, userId, DELETION_BATCH.sparks)
      for (const { id, roomId, version } of sparks) publish('spark:deleted', { id, roomId, version }, { audience: { kind: 'room', roomId }, userId })
      return sparks.length
    }),
    async () => {
      const keys = await deps.db.transaction().execute(async (trx) => await deleteUploadsOwnedByBatch(trx, userId, DELETION_BATCH.uploads))
      // After the commit: a storage failure is logged and never undoes the deletion (the upload
      // sweep removes what is left).
      await removeStoredFiles(deps, keys)
      return keys.length
    },
    async () => await deleteShelvesOwnedByBatch(deps.db, userId, DELETION_BATCH.shelves),
    async () => await deleteMembershipsBatch(deps.db, userId, DELETION_BATCH.memberships)
  ]
  for (const batch of batches) {
    if (!await inBatches(deps, userId, batch)) return
  }
  await inTransaction(deps, async (tx) => {
    // The offices again (nothing, unless an invitation accepted as the sessions were revoked made
    // a membership since): no office is ever left without an owner.
    if (!await leaveOffices(tx, userId)) return
    // Sessions, tokens, the passport, messages and the rest go with the row (foreign keys).
    await deleteUserRow(tx.trx, userId)
  })
}
