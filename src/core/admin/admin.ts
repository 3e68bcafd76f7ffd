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
  AdminListRoomsQuery, AdminListUsersQuery, AdminRoomIdParams, AdminUserIdParams, AuditQuery,
  toAuditEntry, type AdminRole, type AdminRoom, type AdminUser, type AuditEntry
} from './admin.types.js'
import { auditDenied, audited, type AdminRequest, type AuditTarget } from './audit.js'
import { listAuditRows } from './audit.repository.js'

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
