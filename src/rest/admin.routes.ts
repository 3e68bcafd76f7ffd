// /api/admin (DECISIONS §12): administration by an access token of the OIDC provider. The gate
// (src/http/admission.ts) has verified the token, counted the request under its `sub` and checked the
// role before any of these runs; each route is one core call, which audits what it does.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { Core } from '../core/index.js'
import type { AdminRequest } from '../core/admin/audit.js'
import {
  AdminAppealsQuery, AdminListRoomsQuery, AdminListUsersQuery, AdminRoomIdParams, AdminUserIdParams,
  AppealIdParams, AuditQuery, MotdIdParams, ReportIdParams, WidgetIdParams
} from '../core/admin/admin.types.js'
import { AppError } from '../core/errors.js'
import { AdminAppealSchema, AdminReportSchema, AdminRoomSchema, AdminUserSchema, AppealDecisionSchema, AuditEntrySchema, ResolutionSchema, UnsuspensionSchema } from './admin.schemas.js'
import { dataOf, ErrorBody, MotdSchema, NoContent, pageOf, WidgetSchema } from './safety.schemas.js'
import {
  AdminReportsQuery, CreateMotdInput, CreateWidgetInput, DecideAppealInput, LiftSuspensionInput, ResolveReportInput, UpdateMotdInput, UpdateWidgetInput
} from '../core/safety/safety.types.js'

const tags = ['admin']
// The gate's and validation's answers (400, 401, 403, 429 with its headers, 503) are added to every
// route's document from the catalogue (openapi.ts); a route names only what its own action may answer.
const LIST_ERRORS = {}
const ERRORS = { 404: ErrorBody, 409: ErrorBody }

/** The admin the gate admitted (it refuses every request without one). */
export function adminOf (request: FastifyRequest): AdminRequest {
  if (request.admin === null) throw new AppError('unauthenticated', 'An access token of the identity provider is required (Authorization: Bearer).')
  return request.admin
}

export function adminRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()

    r.get('/users', {
      schema: { summary: 'List users (admin)', tags, querystring: AdminListUsersQuery, response: { 200: pageOf(AdminUserSchema), ...LIST_ERRORS } },
      config: { operation: 'admin.listUsers' }
    }, async (request) => {
      const { items, pagination } = await core.admin.listUsers(adminOf(request), request.query)
      return { data: items, pagination }
    })

    r.get('/users/:userId', {
      schema: { summary: 'Get a user (admin)', tags, params: AdminUserIdParams, response: { 200: dataOf(AdminUserSchema), ...ERRORS } },
      config: { operation: 'admin.getUser' }
    }, async (request) => ({ data: await core.admin.getUser(adminOf(request), request.params) }))

    r.get('/rooms', {
      schema: { summary: 'List rooms, private ones included (admin)', tags, querystring: AdminListRoomsQuery, response: { 200: pageOf(AdminRoomSchema), ...LIST_ERRORS } },
      config: { operation: 'admin.listRooms' }
    }, async (request) => {
      const { items, pagination } = await core.admin.listRooms(adminOf(request), request.query)
      return { data: items, pagination }
    })

    r.get('/rooms/:roomId', {
      schema: { summary: 'Get a room (admin)', tags, params: AdminRoomIdParams, response: { 200: dataOf(AdminRoomSchema), ...ERRORS } },
      config: { operation: 'admin.getRoom' }
    }, async (request) => ({ data: await core.admin.getRoom(adminOf(request), request.params) }))

    r.delete('/rooms/:roomId', {
      schema: { summary: 'Delete any room (super_admin)', tags, params: AdminRoomIdParams, response: { 204: NoContent, ...ERRORS } },
      config: { operation: 'admin.deleteRoom' }
    }, async (request, reply) => {
      await core.admin.deleteRoom(adminOf(request), request.params)
      return await reply.code(204).send(null)
    })

    r.get('/reports', {
      schema: { summary: 'List reports, newest first, by status (admin)', tags, querystring: AdminReportsQuery, response: { 200: pageOf(AdminReportSchema), ...LIST_ERRORS } },
      config: { operation: 'admin.listReports' }
    }, async (request) => {
      const { items, pagination } = await core.admin.listReports(adminOf(request), request.query)
      return { data: items, pagination }
    })

    r.get('/reports/:reportId', {
      schema: { summary: 'Get a report with its reporter and labels (admin)', tags, params: ReportIdParams, response: { 200: dataOf(AdminReportSchema), ...ERRORS } },
      config: { operation: 'admin.getReport' }
    }, async (request) => ({ data: await core.admin.getReport(adminOf(request), request.params) }))

    r.post('/reports/:reportId/resolve', {
      schema: { summary: 'Resolve a report: dismiss, hide, suspend or warn (admin)', tags, params: ReportIdParams, body: ResolveReportInput, response: { 200: dataOf(ResolutionSchema), ...ERRORS } },
      config: { operation: 'admin.resolveReport' }
    }, async (request) => ({ data: await core.admin.resolveReport(adminOf(request), request.params, request.body) }))

    r.get('/appeals', {
      schema: { summary: 'List appeals, newest first, by status (admin)', tags, querystring: AdminAppealsQuery, response: { 200: pageOf(AdminAppealSchema), ...LIST_ERRORS } },
      config: { operation: 'admin.listAppeals' }
    }, async (request) => {
      const { items, pagination } = await core.admin.listAppeals(adminOf(request), request.query)
      return { data: items, pagination }
    })

    r.post('/appeals/:appealId/decide', {
      schema: { summary: 'Decide an appeal: upheld, or overturned (reverses the action) (admin)', tags, params: AppealIdParams, body: DecideAppealInput, response: { 200: dataOf(AppealDecisionSchema), ...ERRORS } },
      config: { operation: 'admin.decideAppeal' }
    }, async (request) => ({ data: await core.admin.decideAppeal(adminOf(request), request.params, request.body) }))

    // The body (`{ note? }`) is optional: a bare POST works.
    r.post('/users/:userId/unsuspend', {
      schema: { summary: 'Lift a suspension without an appeal (super_admin)', tags, params: AdminUserIdParams, body: Type.Union([LiftSuspensionInput, Type.Null(), Type.Undefined()]), response: { 200: dataOf(UnsuspensionSchema), ...ERRORS } },
      config: { operation: 'admin.unsuspendUser' }
    }, async (request) => ({ data: await core.admin.unsuspendUser(adminOf(request), request.params, request.body ?? {}) }))

    r.post('/motd', {
      schema: { summary: 'Publish a message of the day (admin)', tags, body: CreateMotdInput, response: { 201: dataOf(MotdSchema), ...ERRORS } },
      config: { operation: 'admin.createMotd', idempotent: true }
    }, async (request, reply) => await reply.code(201).send({ data: await core.admin.createMotd(adminOf(request), request.body) }))

    r.patch('/motd/:motdId', {
      schema: { summary: 'Change a message of the day; end it by setting endsAt to now (admin)', tags, params: MotdIdParams, body: UpdateMotdInput, response: { 200: dataOf(MotdSchema), ...ERRORS } },
      config: { operation: 'admin.updateMotd' }
    }, async (request) => ({ data: await core.admin.updateMotd(adminOf(request), request.params, request.body) }))

    r.post('/widgets', {
      schema: { summary: 'Add a widget to the catalogue (admin)', tags, body: CreateWidgetInput, response: { 201: dataOf(WidgetSchema), ...ERRORS } },
      config: { operation: 'admin.createWidget', idempotent: true }
    }, async (request, reply) => await reply.code(201).send({ data: await core.admin.createWidget(adminOf(request), request.body) }))

    r.patch('/widgets/:widgetId', {
      schema: { summary: 'Change a catalogue widget (admin)', tags, params: WidgetIdParams, body: UpdateWidgetInput, response: { 200: dataOf(WidgetSchema), ...ERRORS } },
      config: { operation: 'admin.updateWidget' }
    }, async (request) => ({ data: await core.admin.updateWidget(adminOf(request), request.params, request.body) }))

    r.delete('/widgets/:widgetId', {
      schema: { summary: 'Remove a widget and its installations (admin)', tags, params: WidgetIdParams, response: { 204: NoContent, ...ERRORS } },
      config: { operation: 'admin.deleteWidget' }
    }, async (request, reply) => {
      await core.admin.deleteWidget(adminOf(request), request.params)
      return await reply.code(204).send(null)
    })

    r.get('/audit', {
      schema: { summary: 'The audit log, newest first (admin)', tags, querystring: AuditQuery, response: { 200: pageOf(AuditEntrySchema), ...LIST_ERRORS } },
      config: { operation: 'admin.listAudit' }
    }, async (request) => {
      const { items, pagination } = await core.admin.listAudit(adminOf(request), request.query)
      return { data: items, pagination }
    })
  }
}
