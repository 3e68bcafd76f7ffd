// Administration (DECISIONS §12): who is an admin (a verified token of the OIDC provider with the
// role), what they may read, what they may do, and the audit log of both. Every action writes its
// audit row in its own transaction (audit.ts); a refused attempt of a verified token writes a
// `denied` row; a token that fails verification is logged only (admin-tokens.ts). Reads are not audited.
import type { CoreDeps } from '../deps.js'
import { AppError, notFound } from '../errors.js'
import { pageWindow, paginationOf, type Page } from '../pagination.js'
import { parseInput } from '../validation.js'
import * as rooms from '../rooms/rooms.repository.js'
import { removeRoom } from '../rooms/room-removal.js'
import { toRoom } from '../rooms/rooms.types.js'
import { toUser } from '../users/users.types.js'
import * as repo from './admin.repository.js'
import { createAdminTokens, type AdminPrincipal } from './admin-tokens.js'
import {
  AdminAppealsQuery, AdminListRoomsQuery, AdminListUsersQuery, AdminRoomIdParams, AdminUserIdParams, AppealIdParams, AuditQuery, MotdIdParams, ReportIdParams, WidgetIdParams,
  toAuditEntry, type AdminRole, type AdminRoom, type AdminUser, type AuditEntry
} from './admin.types.js'
import { auditDenied, audited, type AdminRequest, type AuditTarget } from './audit.js'
import { listAuditRows } from './audit.repository.js'
import * as moderation from '../moderation/moderation.js'
import type { AdminReport, Appeal, ModerationAction, Motd, Widget } from '../safety/safety.types.js'
import { keyed } from '../idempotency/keyed-call.js'

/** What the gate knows of the request when it decides whether an admin may run it. */
export interface AdminAttempt {
  /** The catalogue entry (src/core/operations.ts): the audit row's action. */
  operation: string
  requestId: string
  clientIp: string
  /** The route's path parameters: a refused attempt names what it was aimed at. */
  params: unknown
}

/** The target of a refused attempt: the first `<type>Id` path parameter (`roomId` → a room). */
function targetOfParams (params: unknown): AuditTarget | null {
  if (params === null || typeof params !== 'object') return null
  for (const [name, value] of Object.entries(params)) {
    const match = /^(\w+)Id$/.exec(name)
    if (match !== null && typeof value === 'string') return { type: match[1]!, id: value.slice(0, 200) }
  }
  return null
}

function toAdminUser (row: repo.AdminUserRow): AdminUser {
  return { ...toUser(row), suspendedAt: row.suspended_at?.toISOString() ?? null, roomCount: row.room_count }
}

function toAdminRoom (row: repo.AdminRoomRow): AdminRoom {
  return { ...toRoom(row), hiddenAt: row.hidden_at?.toISOString() ?? null, memberCount: row.member_count, sparkCount: row.spark_count }
}

export function createAdmin (deps: CoreDeps) {
  const { db, config } = deps
  const tokens = config.oidc === undefined || deps.adminKeys === undefined ? undefined : createAdminTokens(config.oidc, deps.adminKeys, deps.log)

  return {
    /**
     * The identity an admin route's `Authorization: Bearer` token proves. Never a session cookie: it
     * is not even read here. 503 where no provider is configured, 401 without a valid token, 503 when
     * the provider's keys cannot be had.
     */
    async authenticate (token: string | undefined): Promise<AdminPrincipal> {
      if (tokens === undefined) throw new AppError('not_configured', 'Administration is not configured on this deployment (OIDC_ISSUER, OIDC_AUDIENCE).')
      if (token === undefined) throw new AppError('unauthenticated', 'An access token of the identity provider is required (Authorization: Bearer).')
      return await tokens.verify(token)
    },

    /** The admin for this request if the token's role is enough; else the refusal is audited and 403. */
    async authorize (principal: AdminPrincipal, required: AdminRole, attempt: AdminAttempt): Promise<AdminRequest> {
      const { role } = principal
      const identity = { sub: principal.sub, email: principal.email, requestId: attempt.requestId, clientIp: attempt.clientIp }
      if (role === 'super_admin' || (role === 'admin' && required === 'admin')) return { ...identity, role }
      await auditDenied(deps, identity, {
        action: attempt.operation,
        target: targetOfParams(attempt.params),
        details: { required, role }
      })
      throw new AppError('forbidden', required === 'super_admin' ? 'This operation needs the super_admin role.' : 'This token does not carry an admin role.')
    },

    async listUsers (_admin: AdminRequest, input: unknown): Promise<Page<AdminUser>> {
      const query = parseInput(AdminListUsersQuery, input)
      const window = pageWindow(query)
      const { rows, total } = await repo.listUsers(db, query, window)
      return { items: rows.map(toAdminUser), pagination: paginationOf(window, total) }
    },

    async getUser (_admin: AdminRequest, input: unknown): Promise<AdminUser> {
      const { userId } = parseInput(AdminUserIdParams, input)
      const row = await repo.findUser(db, userId)
      if (row === undefined) throw notFound('User')
      return toAdminUser(row)
    },

    async listRooms (_admin: AdminRequest, input: unknown): Promise<Page<AdminRoom>> {
      const query = parseInput(AdminListRoomsQuery, input)
      const window = pageWindow(query)
      const { rows, total } = await repo.listRooms(db, query, window)
      return { items: rows.map(toAdminRoom), pagination: paginationOf(window, total) }
    },

    async getRoom (_admin: AdminRequest, input: unknown): Promise<AdminRoom> {
      const { roomId } = parseInput(AdminRoomIdParams, input)
      const row = await repo.findRoom(db, roomId)
      if (row === undefined) throw notFound('Room')
      return toAdminRoom(row)
    },

    /** super_admin: any room, private ones included; its members hear `room:deleted`. */
    async deleteRoom (admin: AdminRequest, input: unknown): Promise<void> {
      const { roomId } = parseInput(AdminRoomIdParams, input)
      if (admin.role !== 'super_admin') throw new AppError('forbidden', 'This operation needs the super_admin role.')
      await audited(deps, admin, 'admin.deleteRoom', async (tx) => {
        const room = await rooms.findRoom(tx.trx, roomId, 'update')
        if (room === undefined) throw notFound('Room')
        await removeRoom(tx, roomId, undefined)
        return room
      }, (room) => ({ target: { type: 'room', id: room.id }, details: { name: room.name, createdBy: room.created_by, isPublic: room.is_public } }))
    },

    async listReports (_admin: AdminRequest, input: unknown): Promise<Page<AdminReport>> {
      return await moderation.listReports(db, input)
    },

    async getReport (_admin: AdminRequest, input: unknown): Promise<AdminReport> {
      const { reportId } = parseInput(ReportIdParams, input)
      return await moderation.getReport(db, reportId)
    },

    async listAppeals (_admin: AdminRequest, input: unknown): Promise<Page<Appeal & { userId: string }>> {
      return await moderation.listAppeals(db, parseInput(AdminAppealsQuery, input))
    },

    // Each action below runs the moderation core inside `audited`, so its audit row commits with it.
    // The moderation core validates the body before it changes anything; what the row records of it
    // (`details.input`) has therefore passed validation.

    /** `dismiss` makes no action; `hide`, `suspend` and `warn` make one whose id appeals name. */
    async resolveReport (admin: AdminRequest, params: unknown, input: unknown): Promise<{ report: AdminReport, action: ModerationAction | null }> {
      const { reportId } = parseInput(ReportIdParams, params)
      return await audited(deps, admin, 'admin.resolveReport', async (tx) => await moderation.resolveReport(tx, deps, admin, reportId, input),
        ({ report, action }) => ({ target: { type: 'report', id: reportId }, details: { input, actionId: action?.id ?? null, reported: { type: report.targetType, id: report.targetId } } }))
    },

    async decideAppeal (admin: AdminRequest, params: unknown, input: unknown): Promise<{ appeal: Appeal, action: ModerationAction }> {
      const { appealId } = parseInput(AppealIdParams, params)
      return await audited(deps, admin, 'admin.decideAppeal', async (tx) => await moderation.decideAppeal(tx, deps, admin, appealId, input),
        ({ action }) => ({ target: { type: 'appeal', id: appealId }, details: { input, actionId: action.id } }))
    },

    /** super_admin: lifts every standing suspension of the user without an appeal. */
    async unsuspendUser (admin: AdminRequest, params: unknown, input: unknown): Promise<{ userId: string, reversedActions: ModerationAction[] }> {
      const { userId } = parseInput(AdminUserIdParams, params)
      return await audited(deps, admin, 'admin.unsuspendUser', async (tx) => await moderation.liftSuspension(tx, deps, admin, userId, input),
        ({ reversedActions }) => ({ target: { type: 'user', id: userId }, details: { input, reversedActionIds: reversedActions.map((a) => a.id) } }))
    },

    createMotd: keyed(deps, async (admin: AdminRequest, input: unknown): Promise<Motd> => {
      return await audited(deps, admin, 'admin.createMotd', async (tx) => await moderation.createMotd(tx, deps, admin, input),
        (motd) => ({ target: { type: 'motd', id: motd.id }, details: { input } }))
    }),

    async updateMotd (admin: AdminRequest, params: unknown, input: unknown): Promise<Motd> {
      const { motdId } = parseInput(MotdIdParams, params)
      return await audited(deps, admin, 'admin.updateMotd', async (tx) => await moderation.updateMotd(tx, deps, admin, motdId, input),
        () => ({ target: { type: 'motd', id: motdId }, details: { input } }))
    },

    createWidget: keyed(deps, async (admin: AdminRequest, input: unknown): Promise<Widget> => {
      return await audited(deps, admin, 'admin.createWidget', async (tx) => await moderation.createWidget(tx, deps, admin, input),
        (widget) => ({ target: { type: 'widget', id: widget.id }, details: { input } }))
    }),

    async updateWidget (admin: AdminRequest, params: unknown, input: unknown): Promise<Widget> {
      const { widgetId } = parseInput(WidgetIdParams, params)
      return await audited(deps, admin, 'admin.updateWidget', async (tx) => await moderation.updateWidget(tx, deps, admin, widgetId, input),
        () => ({ target: { type: 'widget', id: widgetId }, details: { input } }))
    },

    async deleteWidget (admin: AdminRequest, params: unknown): Promise<void> {
      const { widgetId } = parseInput(WidgetIdParams, params)
      await audited(deps, admin, 'admin.deleteWidget', async (tx) => { await moderation.deleteWidget(tx, deps, admin, widgetId) },
        () => ({ target: { type: 'widget', id: widgetId } }))
    },

    /** The audit log, newest first; `actor` is a token's `sub`. */
    async listAudit (_admin: AdminRequest, input: unknown): Promise<Page<AuditEntry>> {
      const query = parseInput(AuditQuery, input)
      const window = pageWindow(query)
      const { rows, total } = await listAuditRows(db, query, window)
      return { items: rows.map(toAuditEntry), pagination: paginationOf(window, total) }
    }
  }
}

export type Admin = ReturnType<typeof createAdmin>
