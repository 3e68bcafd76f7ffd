// All SQL of offices, their members and invitations.
import { sql, type Selectable } from 'kysely'
import type { Db } from '../../db/database.js'
import type { OfficeInvitesTable, OfficeRole, OfficesTable } from '../../db/schema.js'
import type { PageWindow } from '../pagination.js'

export type OfficeRow = Selectable<OfficesTable>
export type InviteRow = Selectable<OfficeInvitesTable>

/** An office with the caller's role in it (null when the caller is not a member). */
export type OfficeWithRole = OfficeRow & { role: OfficeRole | null }

const UNIQUE_VIOLATION = '23505'

export function isUniqueViolation (error: unknown, constraint?: string): boolean {
  const { code, constraint: violated } = error as { code?: unknown, constraint?: unknown }
  return code === UNIQUE_VIOLATION && (constraint === undefined || violated === constraint)
}

/**
 * The office and the caller's role in one round trip: every access decision needs both. `lock`
 * first takes the office row for update, alone, so that changes to an office's members run one at a
 * time (owners counting themselves cannot race past the last-owner rule), and the role is read
 * after the lock is held: a statement that waited for the lock would otherwise see the role as it
 * was before the change it waited for.
 */
export async function findOfficeWithRole (db: Db, officeId: string, userId: string | null, lock = false): Promise<OfficeWithRole | undefined> {
  if (lock && await db.selectFrom('offices').select('id').where('id', '=', officeId).forUpdate().executeTakeFirst() === undefined) return undefined
  return await db.selectFrom('offices')
    .leftJoin('office_members', (join) => join.onRef('office_members.office_id', '=', 'offices.id').on('office_members.user_id', '=', userId ?? ''))
    .selectAll('offices')
    .select('office_members.role')
    .where('offices.id', '=', officeId)
    .executeTakeFirst()
}

/** Locks the office row (the lock every change to its members takes first); false when it is gone. */
export async function lockOffice (db: Db, officeId: string): Promise<boolean> {
  return await db.selectFrom('offices').select('id').where('id', '=', officeId).forUpdate().executeTakeFirst() !== undefined
}

/**
 * Account deletion: locks every office the user is a member of, in id order (so two deletions never
 * wait on each other crosswise), before it counts owners: the same lock role changes, removals and
 * accepts take, so no office can end without an owner.
 */
export async function lockOfficesOf (db: Db, userId: string): Promise<void> {
  await db.selectFrom('offices')
    .innerJoin('office_members', 'office_members.office_id', 'offices.id')
    .select('offices.id')
    .where('office_members.user_id', '=', userId)
    .orderBy('offices.id')
    .forUpdate(['offices'])
    .execute()
}

export async function insertOffice (db: Db, office: { id: string, name: string, slug: string, description: string, isPublic: boolean, createdBy: string, now: Date }): Promise<OfficeRow> {
  return await db.insertInto('offices').values({
    id: office.id,
    name: office.name,
    slug: office.slug,
    description: office.description,
    is_public: office.isPublic,
    created_by: office.createdBy,
    created_at: office.now,
    updated_at: office.now
  }).returningAll().executeTakeFirstOrThrow()
}

export async function updateOfficeRow (db: Db, id: string, patch: { name?: string, slug?: string, description?: string, isPublic?: boolean }, now: Date): Promise<OfficeRow> {
  return await db.updateTable('offices')
    .set({
      ...(patch.name === undefined ? {} : { name: patch.name }),
      ...(patch.slug === undefined ? {} : { slug: patch.slug }),
      ...(patch.description === undefined ? {} : { description: patch.description }),
      ...(patch.isPublic === undefined ? {} : { is_public: patch.isPublic }),
      updated_at: now
    })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow()
}

export async function deleteOfficeRow (db: Db, id: string): Promise<void> {
  await db.deleteFrom('offices').where('id', '=', id).execute()
}

/** The offices the user is a member of, newest first. */
export async function listMemberOffices (db: Db, userId: string, window: PageWindow): Promise<{ rows: OfficeRow[], total: number }> {
  const base = db.selectFrom('offices')
    .innerJoin('office_members', 'office_members.office_id', 'offices.id')
    .where('office_members.user_id', '=', userId)
  const { total } = await base.select(sql<number>`count(*)::int`.as('total')).executeTakeFirstOrThrow()
  const rows = await base.selectAll('offices')
    .orderBy('offices.created_at', 'desc').orderBy('offices.id', 'desc')
    .limit(window.limit).offset(window.offset)
    .execute()
  return { rows, total }
}

export async function listPublicOffices (db: Db, window: PageWindow): Promise<{ rows: OfficeRow[], total: number }> {
  const base = db.selectFrom('offices').where('is_public', '=', true)
  const { total } = await base.select(sql<number>`count(*)::int`.as('total')).executeTakeFirstOrThrow()
  const rows = await base.selectAll()
    .orderBy('created_at', 'desc').orderBy('id', 'desc')
    .limit(window.limit).offset(window.offset)
    .execute()
  return { rows, total }
}

export interface MemberRow {
  office_id: string
  user_id: string
  role: OfficeRole
  joined_at: Date
  display_name: string
  avatar_url: string | null
}

function membersOf (db: Db) {
  return db.selectFrom('office_members')
    .innerJoin('users', 'users.id', 'office_members.user_id')
    .select(['office_members.office_id', 'office_members.user_id', 'office_members.role', 'office_members.joined_at', 'users.display_name', 'users.avatar_url'])
}

export async function findMember (db: Db, officeId: string, userId: string): Promise<MemberRow | undefined> {
  return await membersOf(db).where('office_members.office_id', '=', officeId).where('office_members.user_id', '=', userId).executeTakeFirst()
}

/** Members in the order they joined. */
export async function listMembers (db: Db, officeId: string, window: PageWindow): Promise<{ rows: MemberRow[], total: number }> {
  const { total } = await db.selectFrom('office_members').select(sql<number>`count(*)::int`.as('total')).where('office_id', '=', officeId).executeTakeFirstOrThrow()
  const rows = await membersOf(db)
    .where('office_members.office_id', '=', officeId)
    .orderBy('office_members.joined_at').orderBy('office_members.user_id')
    .limit(window.limit).offset(window.offset)
    .execute()
  return { rows, total }
}

export async function memberIds (db: Db, officeId: string): Promise<string[]> {
  const rows = await db.selectFrom('office_members').select('user_id').where('office_id', '=', officeId).execute()
  return rows.map((r) => r.user_id)
}

export async function isMember (db: Db, officeId: string, userId: string): Promise<boolean> {
  const row = await db.selectFrom('office_members').select('user_id').where('office_id', '=', officeId).where('user_id', '=', userId).executeTakeFirst()
  return row !== undefined
}

export async function countOwners (db: Db, officeId: string): Promise<number> {
  const { n } = await db.selectFrom('office_members').select(sql<number>`count(*)::int`.as('n')).where('office_id', '=', officeId).where('role', '=', 'owner').executeTakeFirstOrThrow()
  return n
}

/** Inserts the membership unless the user already has one (the primary key decides races). */
export async function addMember (db: Db, member: { officeId: string, userId: string, role: OfficeRole, now: Date }): Promise<boolean> {
  const inserted = await db.insertInto('office_members')
    .values({ office_id: member.officeId, user_id: member.userId, role: member.role, joined_at: member.now })
    .onConflict((oc) => oc.columns(['office_id', 'user_id']).doNothing())
    .returning('user_id')
    .executeTakeFirst()
  return inserted !== undefined
}

export async function setMemberRole (db: Db, officeId: string, userId: string, role: OfficeRole): Promise<void> {
  await db.updateTable('office_members').set({ role }).where('office_id', '=', officeId).where('user_id', '=', userId).execute()
}

export async function deleteMember (db: Db, officeId: string, userId: string): Promise<void> {
  await db.deleteFrom('office_members').where('office_id', '=', officeId).where('user_id', '=', userId).execute()
}

// Invitations.

export async function deletePendingInvite (db: Db, officeId: string, email: string): Promise<void> {
  await db.deleteFrom('office_invites').where('office_id', '=', officeId).where('email', '=', email).where('accepted_at', 'is', null).execute()
}

export async function insertInvite (db: Db, invite: { id: string, officeId: string, email: string, role: OfficeRole, tokenHash: string, invitedBy: string, now: Date, expiresAt: Date }): Promise<InviteRow> {
  return await db.insertInto('office_invites').values({
    id: invite.id,
    office_id: invite.officeId,
    email: invite.email,
    role: invite.role,
    token_hash: invite.tokenHash,
    invited_by: invite.invitedBy,
    created_at: invite.now,
    expires_at: invite.expiresAt
  }).returningAll().executeTakeFirstOrThrow()
}

export async function deleteInviteById (db: Db, id: string): Promise<void> {
  await db.deleteFrom('office_invites').where('id', '=', id).execute()
}

/** An invitation is named by its token's hash (the mailed link) or, to its invitee, by its id (the inbox message). */
export type InviteKey = { tokenHash: string } | { id: string }

/** An invitation by its key, with its office and inviter as the invite info shows them. */
export async function findInvite (db: Db, key: InviteKey): Promise<(InviteRow & { office_name: string, office_slug: string, inviter_name: string }) | undefined> {
  const base = db.selectFrom('office_invites')
    .innerJoin('offices', 'offices.id', 'office_invites.office_id')
    .innerJoin('users', 'users.id', 'office_invites.invited_by')
    .selectAll('office_invites')
    .select(['offices.name as office_name', 'offices.slug as office_slug', 'users.display_name as inviter_name'])
  return await ('tokenHash' in key ? base.where('office_invites.token_hash', '=', key.tokenHash) : base.where('office_invites.id', '=', key.id)).executeTakeFirst()
}

/** Marks a pending, unexpired invitation accepted. Exactly one of any number of concurrent callers gets it. */
export async function consumeInvite (db: Db, key: InviteKey, now: Date): Promise<InviteRow | undefined> {
  const base = db.updateTable('office_invites')
    .set({ accepted_at: now })
    .where('accepted_at', 'is', null)
    .where('expires_at', '>', now)
  return await ('tokenHash' in key ? base.where('token_hash', '=', key.tokenHash) : base.where('id', '=', key.id)).returningAll().executeTakeFirst()
}

export async function listPendingInvites (db: Db, officeId: string, now: Date, window: PageWindow): Promise<{ rows: InviteRow[], total: number }> {
  const base = db.selectFrom('office_invites').where('office_id', '=', officeId).where('accepted_at', 'is', null).where('expires_at', '>', now)
  const { total } = await base.select(sql<number>`count(*)::int`.as('total')).executeTakeFirstOrThrow()
  const rows = await base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(window.limit).offset(window.offset).execute()
  return { rows, total }
}

export async function findPendingInvite (db: Db, officeId: string, inviteId: string, now: Date): Promise<InviteRow | undefined> {
  return await db.selectFrom('office_invites').selectAll()
    .where('id', '=', inviteId).where('office_id', '=', officeId).where('accepted_at', 'is', null).where('expires_at', '>', now)
    .executeTakeFirst()
}

/** DECISIONS §13, §16: an inviter who leaves or is removed takes their pending invitations along;
 *  one demoted, those for the roles they may no longer grant (`roles`; all when not given). */
export async function deletePendingInvitesBy (db: Db, officeId: string, invitedBy: string, roles?: readonly OfficeRole[]): Promise<void> {
  if (roles?.length === 0) return
  let query = db.deleteFrom('office_invites').where('office_id', '=', officeId).where('invited_by', '=', invitedBy).where('accepted_at', 'is', null)
  if (roles !== undefined) query = query.where('role', 'in', [...roles])
  await query.execute()
}

/**
 * Invitation mail sent to an address from an office since `since` (DECISIONS §16: at most 3 a day),
 * the oldest first; the office row is locked by the caller, so counting and recording cannot race.
 * Older records are dropped on the way: they no longer count.
 */
export async function inviteSendsSince (db: Db, officeId: string, email: string, since: Date): Promise<Date[]> {
  await db.deleteFrom('office_invite_sends').where('office_id', '=', officeId).where('email', '=', email).where('sent_at', '<=', since).execute()
  const rows = await db.selectFrom('office_invite_sends').select('sent_at').where('office_id', '=', officeId).where('email', '=', email).orderBy('sent_at').execute()
  return rows.map((row) => row.sent_at)
}

export async function recordInviteSend (db: Db, officeId: string, email: string, now: Date): Promise<void> {
  await db.insertInto('office_invite_sends').values({ office_id: officeId, email, sent_at: now }).execute()
}

/** A send whose mail could not go does not count. */
export async function forgetInviteSend (db: Db, officeId: string, email: string, sentAt: Date): Promise<void> {
  await db.deleteFrom('office_invite_sends').where('office_id', '=', officeId).where('email', '=', email).where('sent_at', '=', sentAt).execute()
}

/** Account deletion: the offices the user alone owns (other owners keep theirs), with their members. */
export async function officesOwnedAlone (db: Db, userId: string): Promise<Array<{ officeId: string, memberIds: string[] }>> {
  const owned = await db.selectFrom('office_members as mine')
    .select('mine.office_id')
    .where('mine.user_id', '=', userId)
    .where('mine.role', '=', 'owner')
    .where(({ not, exists, selectFrom }) => not(exists(
      selectFrom('office_members as other').select('other.user_id')
        .whereRef('other.office_id', '=', 'mine.office_id')
        .where('other.role', '=', 'owner')
        .where('other.user_id', '<>', userId)
    )))
    .execute()
  const result: Array<{ officeId: string, memberIds: string[] }> = []
  for (const { office_id: officeId } of owned) result.push({ officeId, memberIds: await memberIds(db, officeId) })
  return result
}

/** Account deletion: the offices the user is a member of (for the member-left their co-members are told). */
export async function membershipsOf (db: Db, userId: string): Promise<string[]> {
  const rows = await db.selectFrom('office_members').select('office_id').where('user_id', '=', userId).execute()
  return rows.map((r) => r.office_id)
}

/** Account deletion: the user's memberships, once their co-members were told. */
export async function deleteMembershipsOf (db: Db, userId: string): Promise<void> {
  await db.deleteFrom('office_members').where('user_id', '=', userId).execute()
}

export async function deleteInvitesTo (db: Db, email: string): Promise<void> {
  await db.deleteFrom('office_invites').where('email', '=', email).execute()
}
