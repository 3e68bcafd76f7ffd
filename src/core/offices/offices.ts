// Office operations (DECISIONS §5, §13): list, get, create, update, delete, and members (list,
// remove or leave, change role). Who may do what is office-access.ts; every write publishes its
// event in its own transaction. Role changes and removals lock the office row first, so owners
// counting themselves cannot race past the last-owner rule.
import type { Actor } from '../actor.js'
import type { CoreDeps } from '../deps.js'
import { AppError, notFound, validationError } from '../errors.js'
import { pageWindow, paginationOf, type Page } from '../pagination.js'
import { inTransaction } from '../transaction.js'
import { keyed, ONE_TRANSACTION } from '../idempotency/keyed-call.js'
import { parseInput } from '../validation.js'
import { newId } from '../../infra/ids.js'
import { normaliseDisplayName } from '../users/display-name.js'
import { grantableBy, requireAllowed, requireAnotherOwner, requireMayGrant, requireMayRemove, requireMembership, requireReadable } from './office-access.js'
import * as repo from './offices.repository.js'
import {
  CreateOfficeInput, ListMembersInput, ListOfficesQuery, MemberParams, OFFICE_NAME_MAX, OfficeIdParams, UpdateMemberRoleInput, UpdateOfficeInput,
  toOffice, type Member, type Office, type OfficeRole
} from './offices.types.js'

const SLUG_CONSTRAINT = 'offices_slug_key'

/** Office names go in mail to strangers and beside people's names: the display-name rules (DECISIONS §16). */
function officeName (raw: string): string {
  return normaliseDisplayName(raw, 'name', OFFICE_NAME_MAX)
}

export function toMember (row: repo.MemberRow): Member {
  return {
    officeId: row.office_id,
    userId: row.user_id,
    role: row.role,
    joinedAt: row.joined_at.toISOString(),
    user: { id: row.user_id, displayName: row.display_name, avatarUrl: row.avatar_url ?? '' }
  }
}

/** A taken slug is a conflict the caller can fix, not a failure. */
async function slugChecked<T> (slug: string | undefined, write: () => Promise<T>): Promise<T> {
  try {
    return await write()
  } catch (error) {
    if (slug !== undefined && repo.isUniqueViolation(error, SLUG_CONSTRAINT)) throw new AppError('conflict', `The slug "${slug}" is taken; choose another.`)
    throw error
  }
}

export function createOffices (deps: CoreDeps) {
  const { db, clock } = deps

  return {
    /** With a caller: their offices; with `scope: "public"`, or anonymous: every public office. */
    async list (actor: Actor | null, input: unknown): Promise<Page<Office>> {
      const query = parseInput(ListOfficesQuery, input)
      const window = pageWindow(query)
      const { rows, total } = actor === null || query.scope === 'public'
        ? await repo.listPublicOffices(db, window)
        : await repo.listMemberOffices(db, actor.userId, window)
      return { items: rows.map(toOffice), pagination: paginationOf(window, total) }
    },

    async get (actor: Actor, input: unknown): Promise<Office> {
      const { officeId } = parseInput(OfficeIdParams, input)
      return toOffice(requireReadable(await repo.findOfficeWithRole(db, officeId, actor.userId), actor))
    },

    /** The caller becomes its first owner. */
    create: keyed(deps, async (actor: Actor, input: unknown): Promise<Office> => {
      const { name: rawName, slug, description, isPublic } = parseInput(CreateOfficeInput, input)
      const name = officeName(rawName)
      const now = clock.now()
      return await slugChecked(slug, async () => await inTransaction(deps, async ({ trx, publish }) => {
        const office = toOffice(await repo.insertOffice(trx, { id: newId('office'), name, slug, description: description ?? '', isPublic: isPublic ?? false, createdBy: actor.userId, now }))
        await repo.addMember(trx, { officeId: office.id, userId: actor.userId, role: 'owner', now })
        publish('office:created', office, { audience: { kind: 'users', userIds: [actor.userId] }, userId: actor.userId })
        return office
      }))
    }, ONE_TRANSACTION),

    /** Owner or admin. */
    async update (actor: Actor, input: unknown): Promise<Office> {
      const { officeId, name: rawName, slug, description, isPublic } = parseInput(UpdateOfficeInput, input)
      if (rawName === undefined && slug === undefined && description === undefined && isPublic === undefined) {
        throw validationError('(body)', 'must contain at least one of name, slug, description, isPublic')
      }
      const name = rawName === undefined ? undefined : officeName(rawName)
      return await slugChecked(slug, async () => await inTransaction(deps, async ({ trx, publish }) => {
        const { role } = requireMembership(await repo.findOfficeWithRole(trx, officeId, actor.userId, true))
        requireAllowed(role, 'update')
        const office = toOffice(await repo.updateOfficeRow(trx, officeId, { name, slug, description, isPublic }, clock.now()))
        publish('office:updated', office, { audience: { kind: 'office', officeId }, userId: actor.userId })
        return office
      }))
    },

    /** Owner only; members and invitations go with it. */
    async delete (actor: Actor, input: unknown): Promise<void> {
      const { officeId } = parseInput(OfficeIdParams, input)
      await inTransaction(deps, async ({ trx, publish }) => {
        const { role } = requireMembership(await repo.findOfficeWithRole(trx, officeId, actor.userId, true))
        requireAllowed(role, 'delete')
        // The office no longer exists to resolve an `office` audience: name its members now.
        const members = await repo.memberIds(trx, officeId)
        await repo.deleteOfficeRow(trx, officeId)
        publish('office:deleted', { id: officeId }, { audience: { kind: 'users', userIds: members }, userId: actor.userId })
      })
    },

    async listMembers (actor: Actor, input: unknown): Promise<Page<Member>> {
      const query = parseInput(ListMembersInput, input)
      requireMembership(await repo.findOfficeWithRole(db, query.officeId, actor.userId))
      const window = pageWindow(query)
      const { rows, total } = await repo.listMembers(db, query.officeId, window)
      return { items: rows.map(toMember), pagination: paginationOf(window, total) }
    },

    /**
     * Removes a member, or the caller themselves (leaving). The removed member is told
     * (`office:member-left`) and from then on hears nothing more of the office; their pending
     * invitations are cancelled.
     */
    async removeMember (actor: Actor, input: unknown): Promise<void> {
      const { officeId, userId } = parseInput(MemberParams, input)
      await inTransaction(deps, async ({ trx, publish }) => {
        const { role } = requireMembership(await repo.findOfficeWithRole(trx, officeId, actor.userId, true))
        const target = await repo.findMember(trx, officeId, userId)
        if (target === undefined) throw notFound('Member')
        requireMayRemove(role, userId === actor.userId, target.role)
        if (target.role === 'owner') requireAnotherOwner(await repo.countOwners(trx, officeId))
        await repo.deleteMember(trx, officeId, userId)
        await repo.deletePendingInvitesBy(trx, officeId, userId)
        const told = [...await repo.memberIds(trx, officeId), userId]
        publish('office:member-left', { officeId, userId }, { audience: { kind: 'users', userIds: told }, userId: actor.userId })
      })
    },

    /** Owner only; the last owner cannot be demoted. A demoted member's pending invitations for roles
     *  they may no longer grant are cancelled (DECISIONS §16). */
    async updateMemberRole (actor: Actor, input: unknown): Promise<Member> {
      const { officeId, userId, role: newRole } = parseInput(UpdateMemberRoleInput, input)
      return await inTransaction(deps, async ({ trx }) => {
        const { role } = requireMembership(await repo.findOfficeWithRole(trx, officeId, actor.userId, true))
        requireAllowed(role, 'change-roles')
        requireMayGrant(role, newRole)
        const target = await repo.findMember(trx, officeId, userId)
        if (target === undefined) throw notFound('Member')
        if (target.role === 'owner' && newRole !== 'owner') requireAnotherOwner(await repo.countOwners(trx, officeId))
        await repo.setMemberRole(trx, officeId, userId, newRole)
        const lost = (['owner', 'admin', 'member'] as const).filter((r: OfficeRole) => !grantableBy(newRole).includes(r))
        await repo.deletePendingInvitesBy(trx, officeId, userId, lost)
        return toMember({ ...target, role: newRole })
      })
    }
  }
}

export type Offices = ReturnType<typeof createOffices>
