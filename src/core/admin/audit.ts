// Writing the audit log (DECISIONS §12). An action's row is written in the action's own transaction,
// so the change and its record commit together or not at all; a refused attempt (a verified token
// without the role) writes its row alone. After the commit the same entry goes out as one JSON log
// line (`msg: "admin audit"`), which is how it reaches a SIEM (README: Administration).
import type { AdminActor } from '../actor.js'
import type { CoreDeps } from '../deps.js'
import { inTransaction, type Transaction } from '../transaction.js'
import { newId } from '../../infra/ids.js'
import { insertAuditRow } from './audit.repository.js'
import { toAuditEntry, type AuditEntry } from './admin.types.js'

/** Who acted, as the audit row names them: the token's identity and the request it came in. */
export interface AuditActor {
  readonly sub: string
  readonly email: string | null
  readonly requestId: string
  /** The client's address by the one rule (src/http/client-ip.ts). */
  readonly clientIp: string
}

/** An admin on one request: what operations take. */
export interface AdminRequest extends AdminActor, AuditActor {}

export interface AuditTarget {
  type: string
  id: string
}

export interface AuditRecord {
  action: string
  target: AuditTarget | null
  outcome: 'permitted' | 'denied'
  details?: Record<string, unknown>
}

type AuditDeps = Pick<CoreDeps, 'db' | 'events' | 'clock' | 'log'>

async function insert (trx: Transaction['trx'], deps: AuditDeps, actor: AuditActor, record: AuditRecord): Promise<AuditEntry> {
  const row = await insertAuditRow(trx, {
    id: newId('audit'),
    at: deps.clock.now(),
    actorSub: actor.sub,
    actorEmail: actor.email,
    action: record.action,
    targetType: record.target?.type ?? null,
    targetId: record.target?.id ?? null,
    outcome: record.outcome,
    details: record.details ?? {},
    requestId: actor.requestId,
    clientIp: actor.clientIp
  })
  return toAuditEntry(row)
}

function emit (deps: AuditDeps, entry: AuditEntry): void {
  deps.log.info({ audit: entry }, 'admin audit')
}

/**
 * Runs an admin action and writes its audit row in one transaction. `describe` names the target and
 * details from the action's result (an id the action created, what it changed).
 */
export async function audited<T> (
  deps: AuditDeps,
  actor: AdminRequest,
  action: string,
  work: (tx: Transaction) => Promise<T>,
  describe: (value: T) => { target: AuditTarget | null, details?: Record<string, unknown> }
): Promise<T> {
  const { value, entry } = await inTransaction(deps, async (tx) => {
    const value = await work(tx)
    const entry = await insert(tx.trx, deps, actor, { action, outcome: 'permitted', ...describe(value) })
    return { value, entry }
  })
  emit(deps, entry)
  return value
}

/** A refused attempt: its row is all the transaction holds. */
export async function auditDenied (deps: AuditDeps, actor: AuditActor, record: Omit<AuditRecord, 'outcome'>): Promise<void> {
  const entry = await inTransaction(deps, async (tx) => await insert(tx.trx, deps, actor, { ...record, outcome: 'denied' }))
  emit(deps, entry)
}
