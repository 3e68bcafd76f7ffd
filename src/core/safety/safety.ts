// The user-facing side of trust and safety (DECISIONS §11): reports and their outcome, appeals,
// the message of the day, rooms' widgets and local classification. The admin side — resolving
// reports, actions, deciding appeals, the catalogues — is src/core/moderation/.
import type { Actor } from '../actor.js'
import type { CoreDeps } from '../deps.js'
import { AppError, notFound } from '../errors.js'
import { pageWindow, paginationOf, type Page } from '../pagination.js'
import { loadVisibleRoom, requireRoomCreator } from '../rooms/room-access.js'
import { inTransaction } from '../transaction.js'
import { keyed, ONE_TRANSACTION } from '../idempotency/keyed-call.js'
import { parseInput } from '../validation.js'
import { newId } from '../../infra/ids.js'
import { activeMotd } from './motd.repository.js'
import * as repo from './reports.repository.js'
import {
  APPEAL_WINDOW_DAYS, ClassifyInput, CreateAppealInput, CreateReportInput, InstallWidgetInput, OwnListQuery, UpdateInstallationInput, WidgetRoomParams,
  InstallationParams, toAppeal, toInstallation, toMotd, toReport, toWidget,
  type Appeal, type Classification, type Motd, type Report, type Widget, type WidgetInstallation
} from './safety.types.js'
import { visibleTarget } from './targets.js'
import { checkSettings } from './widget-settings.js'
import * as widgetRepo from './widgets.repository.js'

const DAY_MS = 86_400_000
/** Widgets one room may hold. */
export const WIDGETS_PER_ROOM_MAX = 50

function settingsOf (widget: Widget, settings: Record<string, unknown>): Record<string, unknown> {
  checkSettings(widget.settingsSchema, settings)
  return settings
}

export function createSafety (deps: CoreDeps) {
  const { db, clock, compute } = deps

  return {
    reports: {
      /** A report on something the reporter can see (else not_found, never revealing it); one open
       *  per reporter and target (conflict). It carries the classifier's labels of the target's text. */
      create: keyed(deps, async (actor: Actor, input: unknown): Promise<Report> => {
        const { targetType, targetId, reason, details } = parseInput(CreateReportInput, input)
        const target = await visibleTarget(db, actor, targetType, targetId)
        // On the compute pool: the classifier takes tens of milliseconds on a long text, which the
        // event loop (every other request) must not wait for.
        const { labels } = await compute.classify(`${target.text}\n${details ?? ''}`)
        try {
          return toReport(await repo.insertReport(db, { id: newId('report'), reporterId: actor.userId, targetType, targetId, reason, details: details ?? null, labels, now: clock.now() }))
        } catch (error) {
          if (repo.isUniqueViolation(error)) throw new AppError('conflict', 'You already have an open report on this target.')
          throw error
        }
      }),

      /** The caller's own reports with their status and outcome, newest first. */
      async list (actor: Actor, input: unknown): Promise<Page<Report>> {
        const window = pageWindow(parseInput(OwnListQuery, input))
        const { rows, total } = await repo.listReportsBy(db, actor.userId, window)
        return { items: rows.map(toReport), pagination: paginationOf(window, total) }
      }
    },

    appeals: {
      /** By the user the action was taken against (anyone else: not_found), once (conflict), within
       *  APPEAL_WINDOW_DAYS days (precondition, saying so). */
      create: keyed(deps, async (actor: Actor, input: unknown): Promise<Appeal> => {
        const { actionId, text } = parseInput(CreateAppealInput, input)
        const action = await repo.findAction(db, actionId)
        if (action === undefined || action.user_id !== actor.userId) throw notFound('Action')
        if (await repo.findAppealOfAction(db, actionId) !== undefined) throw new AppError('conflict', 'This action has already been appealed; an action can be appealed once.')
        const now = clock.now()
        if (now.getTime() - action.created_at.getTime() > APPEAL_WINDOW_DAYS * DAY_MS) {
          throw new AppError('precondition', `The appeal window has closed: an action can be appealed within ${APPEAL_WINDOW_DAYS} days of being taken.`)
        }
        if (action.reversed_at !== null) throw new AppError('precondition', 'This action has already been reversed.')
        try {
          return toAppeal(await repo.insertAppeal(db, { id: newId('appeal'), actionId, userId: actor.userId, text, now }))
        } catch (error) {
          if (repo.isUniqueViolation(error)) throw new AppError('conflict', 'This action has already been appealed; an action can be appealed once.')
          throw error
        }
      }),

      async list (actor: Actor, input: unknown): Promise<Page<Appeal>> {
        const window = pageWindow(parseInput(OwnListQuery, input))
        const { rows, total } = await repo.listAppealsBy(db, actor.userId, window)
        return { items: rows.map(toAppeal), pagination: paginationOf(window, total) }
      }
    },

    /** The messages of the day shown now (starts_at <= now < ends_at). */
    async motd (): Promise<Motd[]> {
      return (await activeMotd(db, clock.now())).map(toMotd)
    },

    async classify (input: unknown): Promise<Classification> {
      const { text } = parseInput(ClassifyInput, input)
      return await compute.classify(text)
    },

    widgets: {
      async catalogue (): Promise<Widget[]> {
        return (await widgetRepo.listWidgets(db)).map(toWidget)
      },

      /** A room's installations, for anyone who may see the room. */
      async listInstalled (actor: Actor, input: unknown): Promise<WidgetInstallation[]> {
        const { roomId } = parseInput(WidgetRoomParams, input)
        await loadVisibleRoom(db, actor, roomId)
        return (await widgetRepo.listInstallations(db, roomId)).map(toInstallation)
      },

      /** By the room's creator (others: forbidden; a room they cannot see: not_found), with
       *  settings valid against the widget's schema (validation naming `settings.<field>`). */
      install: keyed(deps, async (actor: Actor, input: unknown): Promise<WidgetInstallation> => {
        const { roomId, widgetId, settings } = parseInput(InstallWidgetInput, input)
        return await inTransaction(deps, async ({ trx, publish }) => {
          requireRoomCreator(await loadVisibleRoom(trx, actor, roomId, 'update'), actor, 'install widgets in')
          const widgetRow = await widgetRepo.findWidget(trx, widgetId)
          if (widgetRow === undefined) throw notFound('Widget')
          const checked = settingsOf(toWidget(widgetRow), settings ?? {})
          if (await widgetRepo.countInstallations(trx, roomId) >= WIDGETS_PER_ROOM_MAX) {
            throw new AppError('limit_reached', `A room holds at most ${WIDGETS_PER_ROOM_MAX} widgets; remove one first.`)
          }
          const installed = toInstallation(await widgetRepo.insertInstallation(trx, { id: newId('rwidget'), roomId, widgetId, settings: checked, installedBy: actor.userId, now: clock.now() }))
          publish('widget:installed', installed, { audience: { kind: 'room', roomId }, userId: actor.userId })
          return installed
        })
      }, ONE_TRANSACTION),

      async update (actor: Actor, input: unknown): Promise<WidgetInstallation> {
        const { roomId, installationId, settings } = parseInput(UpdateInstallationInput, input)
        return await inTransaction(deps, async ({ trx, publish }) => {
          requireRoomCreator(await loadVisibleRoom(trx, actor, roomId, 'share'), actor, 'change widgets in')
          const row = await widgetRepo.findInstallation(trx, roomId, installationId)
          if (row === undefined) throw notFound('Widget installation')
          const widgetRow = await widgetRepo.findWidget(trx, row.widget_id)
          if (widgetRow === undefined) throw notFound('Widget')
          const checked = settingsOf(toWidget(widgetRow), settings)
          const updated = toInstallation(await widgetRepo.updateInstallationSettings(trx, installationId, checked, clock.now()))
          publish('widget:updated', updated, { audience: { kind: 'room', roomId }, userId: actor.userId })
          return updated
        })
      },

      async remove (actor: Actor, input: unknown): Promise<void> {
        const { roomId, installationId } = parseInput(InstallationParams, input)
        await inTransaction(deps, async ({ trx, publish }) => {
          requireRoomCreator(await loadVisibleRoom(trx, actor, roomId, 'share'), actor, 'remove widgets from')
          const row = await widgetRepo.findInstallation(trx, roomId, installationId)
          if (row === undefined) throw notFound('Widget installation')
          await widgetRepo.deleteInstallation(trx, installationId)
          publish('widget:removed', { id: installationId, roomId, widgetId: row.widget_id }, { audience: { kind: 'room', roomId }, userId: actor.userId })
        })
      }
    }
  }
}
