// All SQL of reports, moderation actions and appeals (DECISIONS §11, §12).
import type { Selectable } from 'kysely'
import type { Db } from '../../db/database.js'
import type { AppealsTable, AppealStatus, ModerationActionKind, ModerationActionsTable, ReportReason, ReportsTable, ReportStatus, ReportTargetType } from '../../db/schema.js'
import type { PageWindow } from '../pagination.js'

export type ReportRow = Selectable<ReportsTable>
export type ActionRow = Selectable<ModerationActionsTable>
export type AppealRow = Selectable<AppealsTable>

export function isUniqueViolation (error: unknown): boolean {
  return (error as { code?: unknown }).code === '23505'
}

export async function insertReport (db: Db, report: { id: string, reporterId: string, targetType: ReportTargetType, targetId: string, reason: ReportReason, details: string | null, labels: unknown, now: Date }): Promise<ReportRow> {
  return await db.insertInto('reports').values({
    id: report.id,
    reporter_id: report.reporterId,
    target_type: report.targetType,
    target_id: report.targetId,
    reason: report.reason,
    details: report.details,
    labels: JSON.stringify(report.labels),
    created_at: report.now
  }).returningAll().executeTakeFirstOrThrow()
}

export async function listReportsBy (db: Db, reporterId: string, window: PageWindow): Promise<{ rows: ReportRow[], total: number }> {
  const base = db.selectFrom('reports').where('reporter_id', '=', reporterId)
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(window.limit).offset(window.offset).execute(),
    base.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()
  ])
  return { rows, total: Number(count.n) }
}

export async function listReports (db: Db, status: ReportStatus | undefined, window: PageWindow): Promise<{ rows: ReportRow[], total: number }> {
  let base = db.selectFrom('reports')
  if (status !== undefined) base = base.where('status', '=', status)
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(window.limit).offset(window.offset).execute(),
    base.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()
  ])
  return { rows, total: Number(count.n) }
}

export async function findReport (db: Db, id: string, lock = false): Promise<ReportRow | undefined> {
  const query = db.selectFrom('reports').selectAll().where('id', '=', id)
  return await (lock ? query.forUpdate() : query).executeTakeFirst()
}

export async function closeReport (db: Db, id: string, change: { status: Exclude<ReportStatus, 'open'>, outcome: string, resolvedBy: string, now: Date }): Promise<ReportRow> {
  return await db.updateTable('reports')
    .set({ status: change.status, outcome: change.outcome, resolved_by: change.resolvedBy, resolved_at: change.now })
    .where('id', '=', id)
    .returningAll().executeTakeFirstOrThrow()
}

export async function insertAction (db: Db, action: { id: string, kind: ModerationActionKind, targetType: ReportTargetType, targetId: string, userId: string, reportId: string | null, note: string | null, takenBy: string, now: Date }): Promise<ActionRow> {
  return await db.insertInto('moderation_actions').values({
    id: action.id,
    kind: action.kind,
    target_type: action.targetType,
    target_id: action.targetId,
    user_id: action.userId,
    report_id: action.reportId,
    note: action.note,
    taken_by: action.takenBy,
    created_at: action.now
  }).returningAll().executeTakeFirstOrThrow()
}

export async function findAction (db: Db, id: string, lock = false): Promise<ActionRow | undefined> {
  const query = db.selectFrom('moderation_actions').selectAll().where('id', '=', id)
  return await (lock ? query.forUpdate() : query).executeTakeFirst()
}

export async function markActionReversed (db: Db, id: string, now: Date): Promise<ActionRow> {
  return await db.updateTable('moderation_actions').set({ reversed_at: now }).where('id', '=', id).returningAll().executeTakeFirstOrThrow()
}

/** Standing actions of one kind on a target (e.g. every `hide` of a spark not yet reversed). */
export async function standingActionsOn (db: Db, kind: ModerationActionKind, targetType: ReportTargetType, targetId: string): Promise<ActionRow[]> {
  return await db.selectFrom('moderation_actions').selectAll()
    .where('kind', '=', kind).where('target_type', '=', targetType).where('target_id', '=', targetId).where('reversed_at', 'is', null)
    .execute()
}

export async function markActionsReversed (db: Db, ids: readonly string[], now: Date): Promise<void> {
  if (ids.length === 0) return
  await db.updateTable('moderation_actions').set({ reversed_at: now }).where('id', 'in', ids).execute()
}

export async function insertAppeal (db: Db, appeal: { id: string, actionId: string, userId: string, text: string, now: Date }): Promise<AppealRow> {
  return await db.insertInto('appeals').values({
    id: appeal.id, action_id: appeal.actionId, user_id: appeal.userId, text: appeal.text, created_at: appeal.now
  }).returningAll().executeTakeFirstOrThrow()
}

export async function findAppeal (db: Db, id: string, lock = false): Promise<AppealRow | undefined> {
  const query = db.selectFrom('appeals').selectAll().where('id', '=', id)
  return await (lock ? query.forUpdate() : query).executeTakeFirst()
}

export async function findAppealOfAction (db: Db, actionId: string): Promise<AppealRow | undefined> {
  return await db.selectFrom('appeals').selectAll().where('action_id', '=', actionId).executeTakeFirst()
}

export async function listAppealsBy (db: Db, userId: string, window: PageWindow): Promise<{ rows: AppealRow[], total: number }> {
  const base = db.selectFrom('appeals').where('user_id', '=', userId)
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(window.limit).offset(window.offset).execute(),
    base.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()
  ])
  return { rows, total: Number(count.n) }
}

export async function listAppeals (db: Db, status: AppealStatus | undefined, window: PageWindow): Promise<{ rows: AppealRow[], total: number }> {
  let base = db.selectFrom('appeals')
  if (status !== undefined) base = base.where('status', '=', status)
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(window.limit).offset(window.offset).execute(),
    base.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()
  ])
  return { rows, total: Number(count.n) }
}

export async function decideAppealRow (db: Db, id: string, change: { status: Exclude<AppealStatus, 'pending'>, note: string | null, decidedBy: string, now: Date }): Promise<AppealRow> {
  return await db.updateTable('appeals')
    .set({ status: change.status, note: change.note, decided_by: change.decidedBy, decided_at: change.now })
    .where('id', '=', id)
    .returningAll().executeTakeFirstOrThrow()
}
