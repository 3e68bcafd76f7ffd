// /api/admin (DECISIONS §12): administration by an access token of the OIDC provider. The gate
// (src/http/admission.ts) has verified the token, counted the request under its `sub` and checked the
// role before any of these runs; each route is one core call, which audits what it does.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Core } from '../core/index.js'
import type { AdminRequest } from '../core/admin/audit.js'
import {
  AdminListRoomsQuery, AdminListUsersQuery, AdminRoomIdParams, AdminRoomSchema, AdminUserIdParams, AdminUserSchema,
  AuditEntrySchema, AuditQuery
} from '../core/admin/admin.types.js'
import { AppError } from '../core/errors.js'
import { dataEnvelope, ErrorEnvelope, GATE_ERRORS, INPUT_ERRORS, listEnvelope, NoContent } from './response-schemas.js'

const tags = ['admin']
const LIST_ERRORS = { 400: ErrorEnvelope, ...GATE_ERRORS }

/** The admin the gate admitted (it refuses every request without one). */
export function adminOf (request: FastifyRequest): AdminRequest {
  if (request.admin === null) throw new AppError('unauthenticated', 'An access token of the identity provider is required (Authorization: Bearer).')
  return request.admin
}

export function adminRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()

    r.get('/users', {
      schema: { summary: 'List users (admin)', tags, querystring: AdminListUsersQuery, response: { 200: listEnvelope(AdminUserSchema), ...LIST_ERRORS } },
      config: { operation: 'admin.listUsers' }
    }, async (request) => {
      const { items, pagination } = await core.admin.listUsers(adminOf(request), request.query)
      return { data: items, pagination }
    })

    r.get('/users/:userId', {
      schema: { summary: 'Get a user (admin)', tags, params: AdminUserIdParams, response: { 200: dataEnvelope(AdminUserSchema), ...INPUT_ERRORS } },
      config: { operation: 'admin.getUser' }
    }, async (request) => ({ data: await core.admin.getUser(adminOf(request), request.params) }))

    r.get('/rooms', {
      schema: { summary: 'List rooms, private ones included (admin)', tags, querystring: AdminListRoomsQuery, response: { 200: listEnvelope(AdminRoomSchema), ...LIST_ERRORS } },
      config: { operation: 'admin.listRooms' }
    }, async (request) => {
      const { items, pagination } = await core.admin.listRooms(adminOf(request), request.query)
      return { data: items, pagination }
    })

    r.get('/rooms/:roomId', {
      schema: { summary: 'Get a room (admin)', tags, params: AdminRoomIdParams, response: { 200: dataEnvelope(AdminRoomSchema), ...INPUT_ERRORS } },
      config: { operation: 'admin.getRoom' }
    }, async (request) => ({ data: await core.admin.getRoom(adminOf(request), request.params) }))

    r.delete('/rooms/:roomId', {
      schema: { summary: 'Delete any room (super_admin)', tags, params: AdminRoomIdParams, response: { 204: NoContent, ...INPUT_ERRORS } },
      config: { operation: 'admin.deleteRoom' }
    }, async (request, reply) => {
      await core.admin.deleteRoom(adminOf(request), request.params)
      return await reply.code(204).send(null)
    })

    r.get('/audit', {
      schema: { summary: 'The audit log, newest first (admin)', tags, querystring: AuditQuery, response: { 200: listEnvelope(AuditEntrySchema), ...LIST_ERRORS } },
      config: { operation: 'admin.listAudit' }
    }, async (request) => {
      const { items, pagination } = await core.admin.listAudit(adminOf(request), request.query)
      return { data: items, pagination }
    })
  }
}
