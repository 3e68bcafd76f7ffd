// Suspending and unsuspending an account (DECISIONS §11), inside the caller's transaction.
// Suspending revokes every session of the user in the transaction; after the commit each revoked
// session is signalled (its streams end on every instance, its cached entry is refused) and the
// user is signalled changed (cached copies, which carry the suspension flag, are forgotten). The
// user may sign in again; the gate then refuses all but SUSPENDED_MAY_CALL (operations.ts).
import type { CoreDeps } from '../deps.js'
import type { Transaction } from '../transaction.js'

export async function setSuspended (tx: Transaction, deps: Pick<CoreDeps, 'sessionSignals'>, userId: string, at: Date | null): Promise<void> {
  await tx.trx.updateTable('users').set({ suspended_at: at }).where('id', '=', userId).execute()
  const revoked = at === null
    ? []
    : await tx.trx.updateTable('sessions').set({ revoked_at: at }).where('user_id', '=', userId).where('revoked_at', 'is', null).returning('id').execute()
  tx.afterCommit(async () => {
    for (const { id } of revoked) await deps.sessionSignals.sessionEnded(id)
    await deps.sessionSignals.userChanged(userId)
  })
}
