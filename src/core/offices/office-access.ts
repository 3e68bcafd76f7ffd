// Who may do what in an office (DECISIONS §5, §13), decided here once for every operation:
// - an office the caller is not a member of does not exist for them (not_found, never forbidden,
//   which would reveal it), except that anyone signed in may read a public office's settings;
// - member: reads the office and its members; admin: also updates the office, invites as member,
//   sees and cancels pending invitations, removes members; owner: everything, including deleting
//   the office, changing roles and inviting as admin or owner;
// - anyone may leave; the last owner may neither leave, be removed nor be demoted.
// The caller's role is read from the database with the office on every request, so a role change
// or a removal takes effect on the caller's very next request, whatever tokens they hold.
import type { Actor } from '../actor.js'
import { AppError, forbidden, notFound } from '../errors.js'
import type { OfficeWithRole } from './offices.repository.js'
import type { OfficeRole } from './offices.types.js'

export type OfficeAction = 'update' | 'delete' | 'invite' | 'manage-invites' | 'change-roles'

const ALLOWED: Record<OfficeAction, readonly OfficeRole[]> = {
  update: ['owner', 'admin'],
  delete: ['owner'],
  invite: ['owner', 'admin'],
  'manage-invites': ['owner', 'admin'],
  'change-roles': ['owner']
}

const DENIED: Record<OfficeAction, string> = {
  update: 'Only an owner or an admin may change the office.',
  delete: 'Only an owner may delete the office.',
  invite: 'Only an owner or an admin may invite.',
  'manage-invites': 'Only an owner or an admin may see or cancel invitations.',
  'change-roles': 'Only an owner may change roles.'
}

/** The office when the caller may read it: a member's, or a public one. */
export function requireReadable (office: OfficeWithRole | undefined, actor: Actor | null): OfficeWithRole {
  if (office === undefined || (office.role === null && !(office.is_public && actor !== null))) throw notFound('Office')
  return office
}

/** The office and the caller's role in it; not_found for anyone who is not a member. */
export function requireMembership (office: OfficeWithRole | undefined): OfficeWithRole & { role: OfficeRole } {
  if (office?.role === null || office?.role === undefined) throw notFound('Office')
  return office as OfficeWithRole & { role: OfficeRole }
}

export function requireAllowed (role: OfficeRole, action: OfficeAction): void {
  if (!ALLOWED[action].includes(role)) throw forbidden(DENIED[action])
}

/** The roles a member of `role` may invite as (or make someone): owners any, admins members, members none. */
export function grantableBy (role: OfficeRole): readonly OfficeRole[] {
  return role === 'owner' ? ['owner', 'admin', 'member'] : role === 'admin' ? ['member'] : []
}

/** Only owners grant the owner's or an admin's rights. */
export function requireMayGrant (role: OfficeRole, granted: OfficeRole): void {
  if (granted !== 'member' && role !== 'owner') throw forbidden(`Only an owner may invite or make someone ${granted === 'owner' ? 'an owner' : 'an admin'}.`)
}

/** Who may remove whom: anyone themselves (leaving), an owner anyone, an admin plain members. */
export function requireMayRemove (role: OfficeRole, self: boolean, target: OfficeRole): void {
  if (self || role === 'owner') return
  if (role === 'admin' && target === 'member') return
  throw forbidden(role === 'admin' ? 'An admin may remove members only; owners remove admins and owners.' : 'Only an owner or an admin may remove members.')
}

/** Refuses to leave an office without an owner (DECISIONS §5). */
export function requireAnotherOwner (owners: number): void {
  if (owners <= 1) throw new AppError('precondition', 'The office needs at least one owner: make another member an owner first.')
}
