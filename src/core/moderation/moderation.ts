// The admin-facing core operations of trust and safety (DECISIONS §11, §12), called by the admin API.
//
// Each runs INSIDE the caller's transaction (`tx`, src/core/transaction.ts) and never opens its own,
// so the admin layer writes its audit row in the same transaction as the action. What must follow
// the commit — the session signals that end a suspended user's streams and make every instance
// forget its cached copy of the user — is registered with `tx.afterCommit`, which `inTransaction`
// runs once the transaction committed (and drops if it rolls back). Events (`message:created`,
// `room:deleted`, …) are published in `tx` and delivered after the commit, as everywhere.
//
// Usage from the admin API:
//   const result = await inTransaction(deps, async (tx) => {
//     const r = await resolveReport(tx, deps, admin, reportId, body)
//     await writeAudit(tx.trx, { actor: admin, action: 'report.resolve', targetId: reportId, … })
//     return r
//   })
import type { AdminActor } from '../actor.js'
import type { CoreDeps } from '../deps.js'
import type { Db } from '../../db/database.js'
import type { ModerationActionKind, ReportTargetType } from '../../db/schema.js'
import { AppError, notFound, validationError } from '../errors.js'
import { pageWindow, paginationOf, type Page } from '../pagination.js'
import type { Transaction } from '../transaction.js'
import { parseInput } from '../validation.js'
import { newId } from '../../infra/ids.js'
import { sendMessage } from '../safety/messages.js'
import * as motdRepo from '../safety/motd.repository.js'
import * as repo from '../safety/reports.repository.js'
import {
  AdminReportsQuery, APPEAL_WINDOW_DAYS, CreateMotdInput, CreateWidgetInput, DecideAppealInput, LiftSuspensionInput, ResolveReportInput,
  TakeActionInput, UpdateMotdInput, UpdateWidgetInput, toAdminReport, toAppeal, toModerationAction, toMotd, toWidget,
  type AdminReport, type Appeal, type AppealStatus, type ModerationAction, type Motd, type Widget
} from '../safety/safety.types.js'
import { anyTarget, isHideable, setHidden } from '../safety/targets.js'
import { checkSettingsSchema } from '../safety/widget-settings.js'
import * as widgetRepo from '../safety/widgets.repository.js'
import { setSuspended } from './suspension.js'

/** What these operations use of the core's dependencies. */
export type ModerationDeps = Pick<CoreDeps, 'clock' | 'sessionSignals'>

const NOUN: Record<ReportTargetType, string> = { room: 'room', spark: 'spark', shelf: 'shelf', office: 'office', user: 'account' }

function noticeOf (kind: ModerationActionKind, targetType: ReportTargetType, text: string, note: string | null): { title: string, body: string } {
  const why = note === null || note === '' ? '' : `\n\nThe moderator's note: ${note}`
  const appeal = `\n\nYou may appeal this decision once, within ${APPEAL_WINDOW_DAYS} days (POST /api/appeals with this message's actionId).`
  const name = text.split('\n')[0]?.slice(0, 100) ?? ''
  switch (kind) {
    case 'hide': return { title: `Your ${NOUN[targetType]} was hidden`, body: `A moderator hid your ${NOUN[targetType]} "${name}" for breaking the rules; it is now visible to you alone.${why}${appeal}` }
    case 'suspend': return { title: 'Your account was suspended', body: `A moderator suspended your account. While it is suspended you can only read your messages and appeal.${why}${appeal}` }
    case 'warn': return { title: 'You received a warning', body: `A moderator warned you about your ${NOUN[targetType]}${name === '' ? '' : ` "${name}"`}.${why}${appeal}` }
  }
}

/**
 * Takes a moderation action and writes its message to the affected user. `hide` applies to a room,
 * spark or shelf; `suspend` to a user, or to the owner of the content named; `warn` to anything
 * (its owner is warned). Not found when the target no longer exists.
 */
export async function takeAction (tx: Transaction, deps: ModerationDeps, admin: AdminActor, input: unknown, reportId: string | null = null): Promise<ModerationAction> {
  const { kind, targetType, targetId, note } = parseInput(TakeActionInput, input)
  const now = deps.clock.now()
  const target = await anyTarget(tx.trx, targetType, targetId)
  if (kind === 'hide' && !isHideable(targetType)) throw validationError('action', 'hide applies to a room, spark or shelf')
  // A suspension is of the account: recorded against the user even when a report named their content.
  const recorded = kind === 'suspend' ? { type: 'user' as const, id: target.ownerId } : { type: targetType, id: targetId }
  const row = await repo.insertAction(tx.trx, { id: newId('act'), kind, targetType: recorded.type, targetId: recorded.id, userId: target.ownerId, reportId, note: note ?? null, takenBy: admin.sub, now })
  if (kind === 'hide') await setHidden(tx, targetType, targetId, now)
  if (kind === 'suspend') await setSuspended(tx, deps, target.ownerId, now)
  await sendMessage(tx, now, { userId: target.ownerId, kind: `moderation:${kind}`, ...noticeOf(kind, targetType, target.text, note ?? null), actionId: row.id })
  return toModerationAction(row)
}

/** Resolves an open report: `dismiss` makes no action; the others take it on the report's target. */
export async function resolveReport (tx: Transaction, deps: ModerationDeps, admin: AdminActor, reportId: string, input: unknown): Promise<{ report: AdminReport, action: ModerationAction | null }> {
  const { action, note } = parseInput(ResolveReportInput, input)
  const report = await repo.findReport(tx.trx, reportId, true)
  if (report === undefined) throw notFound('Report')
  if (report.status !== 'open') throw new AppError('precondition', `This report is already ${report.status}.`)
  const now = deps.clock.now()
  if (action === 'dismiss') {
    const closed = await repo.closeReport(tx.trx, reportId, { status: 'dismissed', outcome: 'dismissed', resolvedBy: admin.sub, now })
    return { report: toAdminReport(closed), action: null }
  }
  const taken = await takeAction(tx, deps, admin, { kind: action, targetType: report.target_type, targetId: report.target_id, ...(note === undefined ? {} : { note }) }, reportId)
  const closed = await repo.closeReport(tx.trx, reportId, { status: 'actioned', outcome: action, resolvedBy: admin.sub, now })
  return { report: toAdminReport(closed), action: taken }
}

/** Reverses an action: shows hidden content again, lifts a suspension (a warning has nothing to undo). */
async function reverse (tx: Transaction, deps: ModerationDeps, action: repo.ActionRow, now: Date): Promise<repo.ActionRow> {
  const reversed = await repo.markActionReversed(tx.trx, action.id, now)
  if (action.kind === 'hide') {
    // Still hidden while another standing hide of the same item remains.
    if ((await repo.standingActionsOn(tx.trx, 'hide', action.target_type, action.target_id)).length === 0) {
      await setHidden(tx, action.target_type, action.target_id, null).catch((error: unknown) => {
        if (!(error instanceof AppError && error.kind === 'not_found')) throw error // deleted since: nothing to show
      })
    }
  }
  if (action.kind === 'suspend' && (await repo.standingActionsOn(tx.trx, 'suspend', 'user', action.user_id)).length === 0) {
    await setSuspended(tx, deps, action.user_id, null)
  }
  return reversed
}

/** Decides a pending appeal: `overturned` reverses the action; either way the user gets a message. */
export async function decideAppeal (tx: Transaction, deps: ModerationDeps, admin: AdminActor, appealId: string, input: unknown): Promise<{ appeal: Appeal, action: ModerationAction }> {
  const { decision, note } = parseInput(DecideAppealInput, input)
  const appeal = await repo.findAppeal(tx.trx, appealId, true)
  if (appeal === undefined) throw notFound('Appeal')
  if (appeal.status !== 'pending') throw new AppError('precondition', `This appeal was already decided (${appeal.status}).`)
  const action = await repo.findAction(tx.trx, appeal.action_id, true)
  if (action === undefined) throw notFound('Action')
  const now = deps.clock.now()
  const decided = await repo.decideAppealRow(tx.trx, appealId, { status: decision, note: note ?? null, decidedBy: admin.sub, now })
  const after = decision === 'overturned' && action.reversed_at === null ? await reverse(tx, deps, action, now) : action
  const why = note === undefined || note === '' ? '' : `\n\nThe moderator's note: ${note}`
  await sendMessage(tx, now, decision === 'overturned'
    ? { userId: appeal.user_id, kind: 'appeal:overturned', title: 'Your appeal was accepted', body: `The moderation action you appealed has been reversed.${why}`, actionId: action.id }
    : { userId: appeal.user_id, kind: 'appeal:upheld', title: 'Your appeal was declined', body: `The moderation action you appealed stands.${why}`, actionId: action.id })
  return { appeal: toAppeal(decided), action: toModerationAction(after) }
}

/** Lifts a user's suspension without an appeal (super_admin, DECISIONS §12): every standing
 *  suspension of the user is reversed. Not found for an unknown user; a user not suspended: conflict. */
export async function liftSuspension (tx: Transaction, deps: ModerationDeps, admin: AdminActor, userId: string, input: unknown): Promise<{ userId: string, reversedActions: ModerationAction[] }> {
  const { note } = parseInput(LiftSuspensionInput, input)
  if (admin.role !== 'super_admin') throw new AppError('forbidden', 'Only a super admin may lift a suspension without an appeal.')
  const user = await tx.trx.selectFrom('users').select(['id', 'suspended_at']).where('id', '=', userId).forUpdate().executeTakeFirst()
  if (user === undefined) throw notFound('User')
  if (user.suspended_at === null) throw new AppError('precondition', 'This user is not suspended.')
  const now = deps.clock.now()
  const standing = await repo.standingActionsOn(tx.trx, 'suspend', 'user', userId)
  await repo.markActionsReversed(tx.trx, standing.map((a) => a.id), now)
  await setSuspended(tx, deps, userId, null)
  const why = note === undefined || note === '' ? '' : `\n\nThe moderator's note: ${note}`
  await sendMessage(tx, now, { userId, kind: 'moderation:unsuspend', title: 'Your account is active again', body: `Your suspension has been lifted.${why}` })
  return { userId, reversedActions: standing.map((a) => toModerationAction({ ...a, reversed_at: now })) }
}

/** Reports for triage, newest first, optionally by status. */
export async function listReports (db: Db, input: unknown): Promise<Page<AdminReport>> {
  const query = parseInput(AdminReportsQuery, input)
  const window = pageWindow(query)
  const { rows, total } = await repo.listReports(db, query.status, window)
  return { items: rows.map(toAdminReport), pagination: paginationOf(window, total) }
}

export async function getReport (db: Db, reportId: string): Promise<AdminReport> {
  const row = await repo.findReport(db, reportId)
  if (row === undefined) throw notFound('Report')
  return toAdminReport(row)
}

/** Appeals, newest first, optionally by status (`pending` for the queue). */
export async function listAppeals (db: Db, input: { status?: AppealStatus, page?: number, limit?: number }): Promise<Page<Appeal & { userId: string }>> {
  const window = pageWindow(input)
  const { rows, total } = await repo.listAppeals(db, input.status, window)
  return { items: rows.map((r) => ({ ...toAppeal(r), userId: r.user_id })), pagination: paginationOf(window, total) }
}

export async function getAction (db: Db, actionId: string): Promise<ModerationAction> {
  const row = await repo.findAction(db, actionId)
  if (row === undefined) throw notFound('Action')
  return toModerationAction(row)
}

function instantOf (value: string, field: string): Date {
  const at = new Date(value)
  if (Number.isNaN(at.getTime())) throw validationError(field, 'must be an ISO 8601 date-time, e.g. 2026-11-28T10:00:00Z')
  return at
}

export async function createMotd (tx: Transaction, deps: ModerationDeps, _admin: AdminActor, input: unknown): Promise<Motd> {
  const { text, severity, startsAt, endsAt } = parseInput(CreateMotdInput, input)
  const start = instantOf(startsAt, 'startsAt')
  const end = instantOf(endsAt, 'endsAt')
  if (end <= start) throw validationError('endsAt', 'must be after startsAt')
  return toMotd(await motdRepo.insertMotd(tx.trx, { id: newId('motd'), text, severity, startsAt: start, endsAt: end, now: deps.clock.now() }))
}

/** Changes any of a message's fields; ending it now is setting `endsAt` to now. */
export async function updateMotd (tx: Transaction, deps: ModerationDeps, _admin: AdminActor, motdId: string, input: unknown): Promise<Motd> {
  const patch = parseInput(UpdateMotdInput, input)
  const current = await motdRepo.findMotd(tx.trx, motdId)
  if (current === undefined) throw notFound('Message of the day')
  const start = patch.startsAt === undefined ? current.starts_at : instantOf(patch.startsAt, 'startsAt')
  const end = patch.endsAt === undefined ? current.ends_at : instantOf(patch.endsAt, 'endsAt')
  if (end <= start) throw validationError('endsAt', 'must be after startsAt')
  return toMotd(await motdRepo.updateMotdRow(tx.trx, motdId, { text: patch.text, severity: patch.severity, startsAt: start, endsAt: end }, deps.clock.now()))
}

export async function createWidget (tx: Transaction, deps: ModerationDeps, _admin: AdminActor, input: unknown): Promise<Widget> {
  const { name, description, settingsSchema } = parseInput(CreateWidgetInput, input)
  checkSettingsSchema(settingsSchema)
  return toWidget(await widgetRepo.insertWidget(tx.trx, { id: newId('widget'), name, description: description ?? '', settingsSchema, now: deps.clock.now() }))
}

/** A new schema applies to later installs and setting changes; existing settings are kept as they are. */
export async function updateWidget (tx: Transaction, deps: ModerationDeps, _admin: AdminActor, widgetId: string, input: unknown): Promise<Widget> {
  const patch = parseInput(UpdateWidgetInput, input)
  if (patch.settingsSchema !== undefined) checkSettingsSchema(patch.settingsSchema)
  if (await widgetRepo.findWidget(tx.trx, widgetId, true) === undefined) throw notFound('Widget')
  return toWidget(await widgetRepo.updateWidgetRow(tx.trx, widgetId, patch, deps.clock.now()))
}

/** Removes the widget and its installations; each room's members hear `widget:removed`. */
export async function deleteWidget (tx: Transaction, _deps: ModerationDeps, _admin: AdminActor, widgetId: string): Promise<void> {
  if (await widgetRepo.findWidget(tx.trx, widgetId, true) === undefined) throw notFound('Widget')
  for (const removed of await widgetRepo.deleteWidgetRow(tx.trx, widgetId)) {
    tx.publish('widget:removed', { id: removed.id, roomId: removed.room_id, widgetId }, { audience: { kind: 'room', roomId: removed.room_id } })
  }
}
