// Trust and safety for users (DECISIONS §11): /api/reports, /api/appeals, /api/messages, /api/motd,
// /api/widgets, /api/classify. Parse → one core call → `{ data }`. Room widget installations live
// under /api/rooms/:roomId/widgets (roomWidgetRoutes, registered with the rooms prefix).
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Core } from '../core/index.js'
import {
  ClassifyInput, CreateAppealInput, CreateReportInput, InstallationParams, InstallWidgetBody, MessageIdParams, OwnListQuery, UpdateInstallationBody, WidgetRoomParams
} from '../core/safety/safety.types.js'
import { actorOf } from './identity.js'
import {
  AppealSchema, ClassificationSchema, ERRORS, InstallationSchema, MessageSchema, MotdSchema, NoContent, ReportSchema, WidgetSchema, dataOf, pageOf
} from './safety.schemas.js'
import { Type } from 'typebox'

export function reportRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()
    const { reports } = core.safety
    r.post('/', {
      schema: { summary: 'Report a room, spark, shelf, office or user', tags: ['safety'], body: CreateReportInput, response: { 201: dataOf(ReportSchema), ...ERRORS } },
      config: { operation: 'reports.createReport', idempotent: true }
    }, async (request, reply) => await reply.code(201).send({ data: await reports.create(actorOf(request), request.body) }))
    r.get('/', {
      schema: { summary: 'The caller\'s own reports with their status and outcome', tags: ['safety'], querystring: OwnListQuery, response: { 200: pageOf(ReportSchema), ...ERRORS } },
      config: { operation: 'reports.listReports' }
    }, async (request) => {
      const { items, pagination } = await reports.list(actorOf(request), request.query)
      return { data: items, pagination }
    })
  }
}

export function appealRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()
    const { appeals } = core.safety
    r.post('/', {
      schema: { summary: 'Appeal a moderation action taken against the caller (once, within 30 days)', tags: ['safety'], body: CreateAppealInput, response: { 201: dataOf(AppealSchema), ...ERRORS } },
      config: { operation: 'appeals.createAppeal', idempotent: true }
    }, async (request, reply) => await reply.code(201).send({ data: await appeals.create(actorOf(request), request.body) }))
    r.get('/', {
      schema: { summary: 'The caller\'s own appeals', tags: ['safety'], querystring: OwnListQuery, response: { 200: pageOf(AppealSchema), ...ERRORS } },
      config: { operation: 'appeals.listAppeals' }
    }, async (request) => {
      const { items, pagination } = await appeals.list(actorOf(request), request.query)
      return { data: items, pagination }
    })
  }
}

export function messageRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()
    const { messages } = core
    r.get('/', {
      schema: { summary: 'The caller\'s inbox of service notices, newest first', tags: ['safety'], querystring: OwnListQuery, response: { 200: pageOf(MessageSchema), ...ERRORS } },
      config: { operation: 'messages.listMessages' }
    }, async (request) => {
      const { items, pagination } = await messages.list(actorOf(request), request.query)
      return { data: items, pagination }
    })
    r.post('/:messageId/read', {
      schema: { summary: 'Mark one of the caller\'s messages read', tags: ['safety'], params: MessageIdParams, response: { 200: dataOf(MessageSchema), ...ERRORS } },
      config: { operation: 'messages.markRead' }
    }, async (request) => ({ data: await messages.markRead(actorOf(request), request.params) }))
    r.delete('/:messageId', {
      schema: { summary: 'Delete one of the caller\'s messages', tags: ['safety'], params: MessageIdParams, response: { 204: NoContent, ...ERRORS } },
      config: { operation: 'messages.deleteMessage' }
    }, async (request, reply) => {
      await messages.delete(actorOf(request), request.params)
      return await reply.code(204).send(null)
    })
  }
}

export function motdRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()
    r.get('/', {
      schema: { summary: 'The messages of the day shown now (public)', tags: ['safety'], response: { 200: dataOf(Type.Array(MotdSchema)), ...ERRORS } },
      config: { operation: 'motd.getMotd' }
    }, async () => ({ data: await core.safety.motd() }))
  }
}

export function widgetRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()
    r.get('/', {
      schema: { summary: 'The widget catalogue, each widget with its settings schema', tags: ['widgets'], response: { 200: dataOf(Type.Array(WidgetSchema)), ...ERRORS } },
      config: { operation: 'widgets.listWidgets' }
    }, async () => ({ data: await core.safety.widgets.catalogue() }))
  }
}

/** Under /api/rooms. */
export function roomWidgetRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()
    const { widgets } = core.safety
    r.get('/:roomId/widgets', {
      schema: { summary: 'A room\'s installed widgets', tags: ['widgets'], params: WidgetRoomParams, response: { 200: dataOf(Type.Array(InstallationSchema)), ...ERRORS } },
      config: { operation: 'widgets.listInstallations' }
    }, async (request) => ({ data: await widgets.listInstalled(actorOf(request), request.params) }))
    r.post('/:roomId/widgets', {
      schema: { summary: 'Install a widget in a room (its creator), settings checked against the widget\'s schema', tags: ['widgets'], params: WidgetRoomParams, body: InstallWidgetBody, response: { 201: dataOf(InstallationSchema), ...ERRORS } },
      config: { operation: 'widgets.installWidget', idempotent: true }
    }, async (request, reply) => await reply.code(201).send({ data: await widgets.install(actorOf(request), { ...request.body, roomId: request.params.roomId }) }))
    r.patch('/:roomId/widgets/:installationId', {
      schema: { summary: 'Change an installed widget\'s settings (the room\'s creator)', tags: ['widgets'], params: InstallationParams, body: UpdateInstallationBody, response: { 200: dataOf(InstallationSchema), ...ERRORS } },
      config: { operation: 'widgets.updateInstallation' }
    }, async (request) => ({ data: await widgets.update(actorOf(request), { ...request.body, ...request.params }) }))
    r.delete('/:roomId/widgets/:installationId', {
      schema: { summary: 'Remove a widget from a room (the room\'s creator)', tags: ['widgets'], params: InstallationParams, response: { 204: NoContent, ...ERRORS } },
      config: { operation: 'widgets.removeInstallation' }
    }, async (request, reply) => {
      await widgets.remove(actorOf(request), request.params)
      return await reply.code(204).send(null)
    })
  }
}

export function classifyRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()
    r.post('/', {
      schema: { summary: 'Classify a text locally (spam, abuse, clean) for triage', tags: ['safety'], body: ClassifyInput, response: { 200: dataOf(ClassificationSchema), ...ERRORS } },
      config: { operation: 'safety.classify' }
    }, async (request) => ({ data: await core.safety.classify(request.body) }))
  }
}
