// All SQL of sign-in, sessions and account-deletion tokens.
import { sql, type Selectable } from 'kysely'
import type { Db } from '../../db/database.js'
import type { LoginLinksTable, SessionKind, SessionsTable, UsersTable } from '../../db/schema.js'

export async function insertLoginLink (db: Db, link: { tokenHash: string, pollHash: string | null, email: string, now: Date, expiresAt: Date }): Promise<void> {
  await db.insertInto('login_links').values({
    token_hash: link.tokenHash,
    poll_hash: link.pollHash,
    email: link.email,
    created_at: link.now,
    expires_at: link.expiresAt
  }).execute()
}

export async function deleteLoginLink (db: Db, tokenHash: string): Promise<void> {
  await db.deleteFrom('login_links').where('token_hash', '=', tokenHash).execute()
}

export async function findLoginLink (db: Db, tokenHash: string): Promise<Selectable<LoginLinksTable> | undefined> {
  return await db.selectFrom('login_links').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst()
}

export async function findLoginLinkByPoll (db: Db, pollHash: string): Promise<Selectable<LoginLinksTable> | undefined> {
  return await db.selectFrom('login_links').selectAll().where('poll_hash', '=', pollHash).executeTakeFirst()
}

/** Marks an unused, unexpired link used. Exactly one of any number of concurrent callers gets a row. */
export async function consumeLoginLink (db: Db, tokenHash: string, now: Date): Promise<{ email: string } | undefined> {
  return await db.updateTable('login_links')
    .set({ used_at: now })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .returning(['email'])
    .executeTakeFirst()
}

export async function setLoginLinkUser (db: Db, tokenHash: string, userId: string): Promise<void> {
  await db.updateTable('login_links').set({ user_id: userId }).where('token_hash', '=', tokenHash).execute()
}

/** Hands a completed login's tokens to its poller once. */
export async function markPollDelivered (db: Db, pollHash: string, now: Date): Promise<{ user_id: string } | undefined> {
  const row = await db.updateTable('login_links')
    .set({ poll_delivered_at: now })
    .where('poll_hash', '=', pollHash)
    .where('poll_delivered_at', 'is', null)
    .where('user_id', 'is not', null)
    .returning(['user_id'])
    .executeTakeFirst()
  return row?.user_id == null ? undefined : { user_id: row.user_id }
}

/** Opens a session, unless its user is being deleted (users.deleting_at): false then. */
export async function insertSession (db: Db, session: { id: string, userId: string, kind: SessionKind, now: Date, expiresAt: Date }): Promise<boolean> {
  const inserted = await db.insertInto('sessions')
    .columns(['id', 'user_id', 'kind', 'created_at', 'expires_at'])
    .expression((eb) => eb.selectFrom('users')
      .select([eb.val(session.id).as('id'), 'users.id as user_id', eb.val(session.kind).as('kind'), sql<Date>`${session.now}::timestamptz`.as('created_at'), sql<Date>`${session.expiresAt}::timestamptz`.as('expires_at')])
      .where('users.id', '=', session.userId)
      .where('users.deleting_at', 'is', null))
    .executeTakeFirst()
  return Number(inserted.numInsertedOrUpdatedRows ?? 0n) > 0
}

/** Sessions with their users' rows, by id, in one round trip (the session cache's batched reads). */
export async function findSessionsWithUsers (db: Db, ids: readonly string[]): Promise<Array<Pick<Selectable<SessionsTable>, 'revoked_at' | 'expires_at'> & Omit<Selectable<UsersTable>, 'search_key' | 'upload_bytes' | 'deleting_at'> & { session_id: string }>> {
  if (ids.length === 0) return []
  return await db.selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .select(['sessions.id as session_id', 'sessions.revoked_at', 'sessions.expires_at', 'users.id', 'users.email', 'users.display_name', 'users.avatar_url', 'users.created_at', 'users.updated_at', 'users.suspended_at'])
    .where('sessions.id', 'in', ids)
    .execute()
}

export async function revokeSession (db: Db, id: string, now: Date): Promise<void> {
  await db.updateTable('sessions').set({ revoked_at: now }).where('id', '=', id).where('revoked_at', 'is', null).execute()
}

export async function extendSession (db: Db, id: string, expiresAt: Date): Promise<void> {
  await db.updateTable('sessions').set({ expires_at: expiresAt }).where('id', '=', id).execute()
}

export async function insertRefreshToken (db: Db, token: { tokenHash: string, sessionId: string, expiresAt: Date }): Promise<void> {
  await db.insertInto('refresh_tokens').values({
    token_hash: token.tokenHash,
    session_id: token.sessionId,
    expires_at: token.expiresAt
  }).execute()
}

export async function findRefreshToken (db: Db, tokenHash: string): Promise<{ session_id: string, used_at: Date | null, expires_at: Date, user_id: string, revoked_at: Date | null } | undefined> {
  return await db.selectFrom('refresh_tokens')
    .innerJoin('sessions', 'sessions.id', 'refresh_tokens.session_id')
    .select(['refresh_tokens.session_id', 'refresh_tokens.used_at', 'refresh_tokens.expires_at', 'sessions.user_id', 'sessions.revoked_at'])
    .where('refresh_tokens.token_hash', '=', tokenHash)
    .executeTakeFirst()
}

/** Marks a refresh token used; undefined when it was already used (a concurrent or replayed use). */
export async function consumeRefreshToken (db: Db, tokenHash: string, now: Date): Promise<{ session_id: string } | undefined> {
  return await db.updateTable('refresh_tokens')
    .set({ used_at: now })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .returning(['session_id'])
    .executeTakeFirst()
}

export async function insertDeletionToken (db: Db, token: { tokenHash: string, userId: string, expiresAt: Date }): Promise<void> {
  await db.insertInto('deletion_tokens').values({
    token_hash: token.tokenHash,
    user_id: token.userId,
    expires_at: token.expiresAt
  }).execute()
}

export async function deleteDeletionToken (db: Db, tokenHash: string): Promise<void> {
  await db.deleteFrom('deletion_tokens').where('token_hash', '=', tokenHash).execute()
}

export async function consumeDeletionToken (db: Db, tokenHash: string, now: Date): Promise<{ user_id: string } | undefined> {
  return await db.updateTable('deletion_tokens')
    .set({ used_at: now })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .returning(['user_id'])
    .executeTakeFirst()
}
