// What confirmed account deletion removes (DECISIONS §3). Runs inside the deletion transaction.
// Rows that reference the user with ON DELETE CASCADE (sessions, tokens, links) go with the user row;
// domains whose data must go explicitly add their step here.
import type { Db } from '../../db/database.js'
import { deleteRoomsCreatedBy } from '../rooms/rooms.repository.js'
import { deleteSparksCreatedBy } from '../sparks/sparks.repository.js'
import { deleteUserRow } from './users.repository.js'

export async function deleteAccountData (trx: Db, userId: string): Promise<void> {
  // Their rooms with every spark in them, then their sparks in rooms of others.
  await deleteRoomsCreatedBy(trx, userId)
  await deleteSparksCreatedBy(trx, userId)
  await deleteUserRow(trx, userId)
}
