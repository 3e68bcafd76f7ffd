// Account deletions that stopped part-way (account-deletion.ts): the process died between two
// batches, or the database went away under one. The account is marked and its sessions revoked, so
// nothing of it can be used or added to; this finishes it. Each instance looks shortly after it
// starts, then every minute, for marks that have not moved for STALE_MS (a deletion under way renews
// its mark after every batch), claims each by renewing the mark in one conditional update that only
// one instance can win, and completes it.
import type { CoreDeps } from '../deps.js'
import { startPeriodicJob, type PeriodicJob } from '../periodic-job.js'
import { completeAccountDeletion } from './account-deletion.js'

/** A deletion whose mark is older than this is taken to have stopped (its batches take well under a second). */
export const STALE_MS = 120_000
const CHECK_EVERY_MS = 60_000
/** The first look, soon after start-up: a restart is the usual reason a deletion stopped. */
const FIRST_CHECK_MS = 2_000
/** Deletions resumed per look; the next look takes the rest. */
const PER_CHECK = 10

type ResumeDeps = Pick<CoreDeps, 'db' | 'events' | 'storage' | 'log' | 'clock'>

/** Finishes the deletions that stopped; answers how many it finished. */
export async function resumeInterruptedDeletions (deps: ResumeDeps, stopped: () => boolean = () => false): Promise<number> {
  const cutoff = new Date(deps.clock.now().getTime() - STALE_MS)
  const stale = await deps.db.selectFrom('users').select('id').where('deleting_at', '<', cutoff).orderBy('deleting_at').limit(PER_CHECK).execute()
  let finished = 0
  for (const { id } of stale) {
    if (stopped()) break
    const claimed = await deps.db.updateTable('users').set({ deleting_at: deps.clock.now() })
      .where('id', '=', id).where('deleting_at', '<', cutoff)
      .executeTakeFirst()
    if (claimed.numUpdatedRows === 0n) continue
    deps.log.info({ userId: id }, 'account deletion: finishing a deletion that stopped part-way')
    await completeAccountDeletion(deps, id)
    finished++
  }
  return finished
}

/** Looks shortly after start-up and then every minute on this instance. */
export function startDeletionResumes (deps: ResumeDeps): PeriodicJob {
  return startPeriodicJob({ firstMs: FIRST_CHECK_MS, everyMs: CHECK_EVERY_MS, log: deps.log, failure: 'account deletion: finishing stopped deletions failed; tried again in a minute' },
    async (stopped) => await resumeInterruptedDeletions(deps, stopped))
}
