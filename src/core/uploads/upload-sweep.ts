// The sweep of stored bytes that no upload row refers to (DECISIONS §16): bytes stored for an upload
// whose row never committed (the process died between the two, or the clean-up after a refusal
// failed), and bytes whose removal after a delete failed. Uploads write bytes first and rows second,
// and remove rows first and bytes second, never calling storage inside a transaction; this sweep is
// what makes the leftovers of either order go.
//
// Bytes younger than the grace period are left alone: their upload may still be arriving (a request
// lasts at most HTTP_REQUEST_TIMEOUT_MS) or committing. Every instance checks each hour whether a
// sweep is due; one claims it, under an advisory lock and a `maintenance_runs` row, so one instance
// sweeps per period, and any bytes a sweep finds are at most a period plus the grace old.
import { sql } from 'kysely'
import type { CoreDeps } from '../deps.js'
import { startPeriodicJob, type PeriodicJob } from '../periodic-job.js'
import { keysInUse } from './uploads.repository.js'
import { removeStoredFiles } from './uploads.js'

/** Bytes younger than this are never swept. */
export const SWEEP_GRACE_MS = 3600_000
/** One sweep per this period, whatever the number of instances: leftovers go within a day. */
export const SWEEP_PERIOD_MS = 12 * 3600_000
/** How often each instance asks whether the period's sweep is due. */
const CHECK_EVERY_MS = 3600_000
/** The first check waits this long after start-up, so starting instances do not sweep first thing. */
const FIRST_CHECK_MS = 60_000

/** Arbitrary, fixed: keeps the sweep's lock apart from any other advisory lock (events use 0x4556). */
const SWEEP_LOCK_CLASS = 0x5550 // "UP"
const JOB = 'upload-sweep'

type SweepDeps = Pick<CoreDeps, 'db' | 'storage' | 'clock' | 'log'>

/**
 * Claims the sweep in a short transaction: nobody waits on the lock (another instance holding it is
 * claiming now), and the claim fails when a sweep started within the period, unless `force`.
 */
async function claim (deps: SweepDeps, now: Date, force: boolean): Promise<boolean> {
  return await deps.db.transaction().execute(async (trx) => {
    const lock = await sql<{ locked: boolean }>`select pg_try_advisory_xact_lock(${SWEEP_LOCK_CLASS}::int, 1) as locked`.execute(trx)
    if (lock.rows[0]?.locked !== true) return false
    const due = new Date(now.getTime() - SWEEP_PERIOD_MS)
    // A start in the future (an instance whose clock ran ahead) does not hold the others off.
    const claimed = await trx.insertInto('maintenance_runs').values({ job: JOB, started_at: now })
      .onConflict((oc) => oc.column('job').doUpdateSet({ started_at: now })
        .where((eb) => force ? eb.lit(true) : eb.or([eb('maintenance_runs.started_at', '<=', due), eb('maintenance_runs.started_at', '>', now)])))
      .returning('job')
      .executeTakeFirst()
    return claimed !== undefined
  })
}

/**
 * Sweeps once if due (or `force`: tests, an operator): removes the bytes older than the grace period
 * that no upload row refers to. Answers how many it removed, or undefined when it did not run
 * (another instance swept within the period, or is claiming now).
 */
export async function sweepUnreferencedBytes (deps: SweepDeps, options: { force?: boolean, stopped?: () => boolean } = {}): Promise<number | undefined> {
  const now = deps.clock.now()
  if (!await claim(deps, now, options.force ?? false)) return undefined
  let removed = 0
  // Outside any transaction: a listing and removals may take a while on a large bucket.
  for await (const keys of deps.storage.list(new Date(now.getTime() - SWEEP_GRACE_MS))) {
    const inUse = await keysInUse(deps.db, keys)
    const unreferenced = keys.filter((key) => !inUse.has(key))
    await removeStoredFiles(deps, unreferenced)
    removed += unreferenced.length
    if (options.stopped?.() === true) break
  }
  if (removed > 0) deps.log.info({ removed }, 'storage: swept bytes no upload refers to')
  return removed
}

/** Checks hourly on this instance whether the sweep is due; `stop` ends it and waits for a sweep
 *  under way to finish its batch (on close, before the database closes). */
export function startUploadSweeps (deps: SweepDeps): PeriodicJob {
  return startPeriodicJob({ firstMs: FIRST_CHECK_MS, everyMs: CHECK_EVERY_MS, log: deps.log, failure: 'storage: sweeping unreferenced bytes failed' },
    async (stopped) => await sweepUnreferencedBytes(deps, { stopped }))
}
