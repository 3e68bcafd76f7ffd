// Office invitations by e-mail (DECISIONS §13): an owner or admin invites an address with a role;
// the mailed link `${APP_URL}/invites/accept?token=…` carries a token of 256 random bits, stored only
// as a hash, single use, valid 7 days. Inviting an address again replaces its pending invitation
// (the old link stops working); inviting a member is a conflict. Anyone holding the token may see
// what it invites to; accepting needs the signed-in user whose address was invited, and of any
// number of parallel accepts exactly one makes the membership. Invitations are mail to strangers
// (DECISIONS §16): one address gets at most 3 a day from one office (429 with Retry-After after
// that), counted per mail sent, so replacing a pending invitation counts too.
//
// An address that has an account also finds the invitation in its inbox (DECISIONS §11, §17): an
// `office-invite` message written in the invitation's own transaction, announced by
// `message:created`. Its link names the invitation by id (`/invites/accept?inviteId=…`), not by its
// token: a message is stored as written, and the token must stay stored only as a hash. The id is
// enough because accepting proves more than the token does: it takes the signed-in user whose
// address was invited (who could open the mailed link anyway). The message outlives the invitation
// (accepted, cancelled, replaced or expired: it stays readable; the link then answers that the
// invitation is no longer valid).
import type { Actor } from '../actor.js'
import type { CoreDeps } from '../deps.js'
import { AppError, forbidden, notFound, validationError } from '../errors.js'
import { sendOrUndo } from '../mail-or-undo.js'
import { sendMessage, withdrawMessage } from '../safety/messages.js'
import { pageWindow, paginationOf, type Page } from '../pagination.js'
import { inTransaction } from '../transaction.js'
import { keyed } from '../idempotency/keyed-call.js'
import { findUserById, findUserIdByEmail } from '../users/users.repository.js'
import { parseInput } from '../validation.js'
import { hashToken, newId, newSecretToken } from '../../infra/ids.js'
import { requireAllowed, requireMayGrant, requireMembership } from './office-access.js'
import { toMember } from './offices.js'
import * as repo from './offices.repository.js'
import {
  AcceptInviteInput, INVITE_TTL_MS, InviteInput, InviteParams, InviteTokenInput, ListInvitesInput, toInvite, toOffice,
  type Invite, type InviteInfo, type Member, type Office, type OfficeRole
} from './offices.types.js'

const normaliseEmail = (email: string): string => email.trim().toLowerCase()

/** DECISIONS §16: invitation mail one address may get from one office in a day. */
export const INVITES_PER_ADDRESS_PER_DAY = 3
const DAY_MS = 24 * 3600_000

const asRole = (role: OfficeRole): string => role === 'admin' ? 'an admin' : `a ${role}`

function refusedToken (invite: { accepted_at: Date | null, expires_at: Date } | undefined, now: Date): AppError | undefined {
  if (invite === undefined) return new AppError('invalid_token', 'This invitation is not valid.')
  if (invite.accepted_at !== null) return new AppError('invalid_token', 'This invitation has already been used.')
  if (invite.expires_at <= now) return new AppError('invalid_token', 'This invitation has expired; ask for a new one.')
  return undefined
}

export function createInvites (deps: CoreDeps) {
  const { db, clock, config } = deps

  return {
    /** Owner or admin; only an owner invites as owner or admin. Answers the pending invitation. */
    invite: keyed(deps, async (actor: Actor, input: unknown): Promise<Invite> => {
      const { officeId, email: rawEmail, role } = parseInput(InviteInput, input)
      const email = normaliseEmail(rawEmail)
      const now = clock.now()
      const token = newSecretToken()
      const { invite, officeName, inviterName, message } = await inTransaction(deps, async (tx) => {
        const { trx } = tx
        // Locked: two invitations of one address at once leave exactly one pending.
        const office = requireMembership(await repo.findOfficeWithRole(trx, officeId, actor.userId, true))
        requireAllowed(office.role, 'invite')
        requireMayGrant(office.role, role)
        const invitee = await findUserIdByEmail(trx, email)
        if (invitee !== undefined && await repo.isMember(trx, officeId, invitee)) throw new AppError('conflict', `${email} is already a member of this office.`)
        const sends = await repo.inviteSendsSince(trx, officeId, email, new Date(now.getTime() - DAY_MS))
        if (sends.length >= INVITES_PER_ADDRESS_PER_DAY) {
          const retryAfter = Math.max(1, Math.ceil((sends[0]!.getTime() + DAY_MS - now.getTime()) / 1000))
          throw new AppError('rate_limited', `${email} has had ${INVITES_PER_ADDRESS_PER_DAY} invitations from this office within a day; try again in ${Math.ceil(retryAfter / 3600)} hour(s).`, [], retryAfter)
        }
        await repo.recordInviteSend(trx, officeId, email, now)
        await repo.deletePendingInvite(trx, officeId, email)
        const invite = await repo.insertInvite(trx, { id: newId('invite'), officeId, email, role, tokenHash: hashToken(token), invitedBy: actor.userId, now, expiresAt: new Date(now.getTime() + INVITE_TTL_MS) })
        const inviter = await findUserById(trx, actor.userId)
        const inviterName = inviter?.display_name ?? 'A member'
        let message: { userId: string, id: string } | undefined
        if (invitee !== undefined) {
          const sent = await sendMessage(tx, now, {
            userId: invitee,
            kind: 'office-invite',
            title: `${inviterName} invites you to ${office.name}`,
            body: `${inviterName} invites you to join ${office.name} as ${asRole(role)}. Accept within 7 days, by ${invite.expires_at.toISOString().slice(0, 10)}; if you did not expect it, ignore this message.`,
            link: `${config.appUrl}/invites/accept?inviteId=${invite.id}`
          })
          message = { userId: invitee, id: sent.id }
        }
        return { invite, officeName: office.name, inviterName, message }
      })
      await sendOrUndo(deps, {
        to: email,
        subject: `You are invited to ${officeName}`,
        text: `${inviterName} invites you to join ${officeName} on Canvas as ${asRole(role)}.\n\n` +
          `Open this link within 7 days to accept:\n\n${config.appUrl}/invites/accept?token=${token}\n\n` +
          'If you did not expect it, ignore this message.\n'
      }, async () => {
        await repo.deleteInviteById(db, invite.id)
        await repo.forgetInviteSend(db, officeId, email, now)
        if (message !== undefined) await withdrawMessage(db, message.userId, message.id)
      })
      return toInvite(invite)
    }),

    /** Public: what a token invites to, without using it. */
    async info (input: unknown): Promise<InviteInfo> {
      const { token } = parseInput(InviteTokenInput, input)
      const invite = await repo.findInvite(db, { tokenHash: hashToken(token) })
      const refusal = refusedToken(invite, clock.now())
      if (refusal !== undefined || invite === undefined) throw refusal ?? new AppError('invalid_token', 'This invitation is not valid.')
      return {
        officeId: invite.office_id,
        officeName: invite.office_name,
        officeSlug: invite.office_slug,
        inviterName: invite.inviter_name,
        email: invite.email,
        role: invite.role,
        expiresAt: invite.expires_at.toISOString()
      }
    },

    /** The signed-in user whose address was invited joins with the invited role. The invitation is
     *  named by the mailed token or by its id (the inbox message's link): either, not both. */
    async accept (actor: Actor, input: unknown): Promise<{ office: Office, member: Member }> {
      const { token, inviteId } = parseInput(AcceptInviteInput, input)
      if ((token === undefined) === (inviteId === undefined)) {
        throw validationError('token', token === undefined ? 'is required (or inviteId, from the inbox message)' : 'and inviteId cannot both be sent')
      }
      const key: repo.InviteKey = token !== undefined ? { tokenHash: hashToken(token) } : { id: inviteId ?? '' }
      const now = clock.now()
      const invite = await repo.findInvite(db, key)
      const refusal = refusedToken(invite, now)
      if (refusal !== undefined || invite === undefined) throw refusal ?? new AppError('invalid_token', 'This invitation is not valid.')
      const user = await findUserById(db, actor.userId)
      if (user === undefined || user.email !== invite.email) throw forbidden('This invitation is for another address: sign in with the address it was sent to.')
      const joined = await inTransaction(deps, async ({ trx, publish }) => {
        // The office lock first, as every change to its members and its deletion take it: an accept
        // racing a delete waits for it (or it for the accept), never each for the other's rows.
        if (!await repo.lockOffice(trx, invite.office_id)) throw new AppError('invalid_token', 'This invitation is not valid: its office was deleted.')
        const consumed = await repo.consumeInvite(trx, key, now)
        if (consumed === undefined) throw refusedToken(await repo.findInvite(trx, key), now) ?? new AppError('invalid_token', 'This invitation has already been used.')
        // The membership's key decides: of parallel accepts (or an earlier join), one membership.
        if (!await repo.addMember(trx, { officeId: consumed.office_id, userId: actor.userId, role: consumed.role, now })) {
          throw new AppError('conflict', 'You are already a member of this office.')
        }
        publish('office:member-joined', { officeId: consumed.office_id, userId: actor.userId, role: consumed.role }, { audience: { kind: 'office', officeId: consumed.office_id }, userId: actor.userId })
        const office = await repo.findOfficeWithRole(trx, consumed.office_id, actor.userId)
        const member = await repo.findMember(trx, consumed.office_id, actor.userId)
        if (office === undefined || member === undefined) throw notFound('Office')
        return { office: toOffice(office), member: toMember(member) }
      })
      return joined
    },

    /** Pending (unexpired, unaccepted) invitations, newest first; owner or admin. */
    async list (actor: Actor, input: unknown): Promise<Page<Invite>> {
      const query = parseInput(ListInvitesInput, input)
      const { role } = requireMembership(await repo.findOfficeWithRole(db, query.officeId, actor.userId))
      requireAllowed(role, 'manage-invites')
      const window = pageWindow(query)
      const { rows, total } = await repo.listPendingInvites(db, query.officeId, clock.now(), window)
      return { items: rows.map(toInvite), pagination: paginationOf(window, total) }
    },

    /** Cancels a pending invitation (its link stops working); owner or admin. */
    async cancel (actor: Actor, input: unknown): Promise<void> {
      const { officeId, inviteId } = parseInput(InviteParams, input)
      const { role } = requireMembership(await repo.findOfficeWithRole(db, officeId, actor.userId))
      requireAllowed(role, 'manage-invites')
      if (await repo.findPendingInvite(db, officeId, inviteId, clock.now()) === undefined) throw notFound('Invitation')
      await repo.deleteInviteById(db, inviteId)
    }
  }
}

export type Invites = ReturnType<typeof createInvites>
