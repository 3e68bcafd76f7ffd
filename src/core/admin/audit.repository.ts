// The SQL of the audit log: insert and list, nothing else. The table refuses UPDATE, DELETE and
// TRUNCATE itself (migration admin_audit_log), and its Kysely type refuses an update at compile time.
import { sql, type Selectable } from 'kysely'
import type { Db } from '../../db/database.js'
import type { AdminAuditLogTable } from '../../db/schema.js'
import type { PageWindow } from '../pagination.js'

export type AuditRow = Selectable<AdminAuditLogTable>

export interface NewAuditRow {
  id: string
  at: Date
  actorSub: string
  actorEmail: string | null
  action: string
  targetType: string | null
  targetId: string | null
  outcome: 'permitted' | 'denied'
  details: Record<string, unknown>
  requestId: string
  clientIp: string
}

export async function insertAuditRow (db: Db, row: NewAuditRow): Promise<AuditRow> {
  return await db.insertInto('admin_audit_log').values({
    id: row.id,
    at: row.at,
    actor_sub: row.actorSub,
    actor_email: row.actorEmail,
    action: row.action,
    target_type: row.targetType,
    target_id: row.targetId,
    outcome: row.outcome,
    details: JSON.stringify(row.details),
    request_id: row.requestId,
    client_ip: row.clientIp
  }).returningAll().executeTakeFirstOrThrow()
}

export interface AuditFilters { actor?: string | undefined, action?: string | undefined, targetId?: string | undefined }

/** Newest first: by insertion order, which each filter's index serves. */
export async function listAuditRows (db: Db, filters: AuditFilters, window: PageWindow): Promise<{ rows: AuditRow[], total: number }> {
  let base = db.selectFrom('admin_audit_log')
  if (filters.actor !== undefined) base = base.where('actor_sub', '=', filters.actor)
  if (filters.action !== undefined) base = base.where('action', '=', filters.action)
  if (filters.targetId !== undefined) base = base.where('target_id', '=', filters.targetId)
  const { total } = await base.select(sql<number>`count(*)::int`.as('total')).executeTakeFirstOrThrow()
  const rows = await base.selectAll().orderBy('seq', 'desc').limit(window.limit).offset(window.offset).execute()
  return { rows, total }
}
