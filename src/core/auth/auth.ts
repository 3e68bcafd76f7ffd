// Sign-in by magic link (browser cookie or RPC poll), sessions, refresh-token rotation, account deletion.
import { AppError } from '../errors.js'
import type { Actor } from '../actor.js'
import type { CoreDeps } from '../deps.js'
import { parseInput } from '../validation.js'
import { monotonicMs } from '../../infra/clock.js'
import { hashToken, newId, newSecretToken } from '../../infra/ids.js'
import { findOrCreateUserByEmail, findUserById, findUserIdByEmail } from '../users/users.repository.js'
import { toUser, type User } from '../users/users.types.js'
import { completeAccountDeletion, markForDeletion } from '../users/account-deletion.js'
import { inTransaction } from '../transaction.js'
import { sendOrUndo } from '../mail-or-undo.js'
import * as repo from './auth.repository.js'
import { createSessionCache } from './session-cache.js'
import { createTokenCodec } from './tokens.js'
import {
  ACCESS_TOKEN_TTL_MS, COOKIE_SESSION_TTL_MS, DELETION_TOKEN_TTL_MS, LINK_TTL_MS, POLL_GRACE_MS, REFRESH_TOKEN_TTL_MS,
  PingInput, PollInput, RefreshInput, RequestLoginInput, TokenInput, type LoginPoll, type TokenPair
} from './auth.types.js'
import { logThrottled } from '../../infra/throttled-log.js'

const normaliseEmail = (email: string): string => email.trim().toLowerCase()

function accountBeingDeleted (): AppError {
  return new AppError('invalid_token', 'This account is being deleted; once it is gone, the same address can sign up again.')
}
const later = (from: Date, ms: number): Date => new Date(from.getTime() + ms)

export function createAuth (deps: CoreDeps) {
  const { db, clock, config, log, sessionSignals } = deps
  const codec = createTokenCodec(config.jwtSecret)
  const validSessions = createSessionCache({
    now: monotonicMs,
    load: async (ids) => {
      const rows = await repo.findSessionsWithUsers(db, ids)
      return new Map(rows.map((row) => [row.session_id, { userId: row.id, expiresAt: row.expires_at, revokedAt: row.revoked_at, user: toUser(row), suspended: row.suspended_at !== null }]))
    },
    onRefreshError: (error) => { logThrottled(log, 'warn', 'session cache: renewing sessions failed; they are read again when they expire', { err: error }) }
  })
  sessionSignals.listen({
    // Sent once the revocation committed: refused here from now on without asking the database.
    sessionEnded: (sessionId) => { validSessions.refuse(sessionId, 'revoked') },
    accountDeleted: (userId) => { validSessions.forgetUser(userId) },
    userChanged: (userId) => { validSessions.forgetUser(userId) },
    lostTrack: () => { validSessions.clear() }
  })

  async function endSession (sessionId: string, now: Date): Promise<void> {
    await repo.revokeSession(db, sessionId, now)
    validSessions.refuse(sessionId, 'revoked')
    await sessionSignals.sessionEnded(sessionId)
  }

  async function issueTokenPair (userId: string, sessionId: string, now: Date): Promise<TokenPair> {
    const refreshToken = newSecretToken()
    const refreshExpiresAt = later(now, REFRESH_TOKEN_TTL_MS)
    await repo.insertRefreshToken(db, { tokenHash: hashToken(refreshToken), sessionId, expiresAt: refreshExpiresAt })
    await repo.extendSession(db, sessionId, refreshExpiresAt)
    const expiresAt = later(now, ACCESS_TOKEN_TTL_MS)
    return {
      accessToken: codec.sign({ userId, sessionId, expiresAt, issuedAt: now }),
      refreshToken,
      expiresAt: expiresAt.toISOString()
    }
  }

  /** Redeems a link: exactly one of concurrent redemptions wins; signs the address up on first use. */
  async function redeemLink (token: string): Promise<User> {
    const tokenHash = hashToken(token)
    const now = clock.now()
    const user = await db.transaction().execute(async (trx) => {
      const link = await repo.consumeLoginLink(trx, tokenHash, now)
      if (link === undefined) return undefined
      const row = await findOrCreateUserByEmail(trx, link.email, now)
      await repo.setLoginLinkUser(trx, tokenHash, row.id)
      return row
    })
    if (user !== undefined) return toUser(user)
    const link = await repo.findLoginLink(db, tokenHash)
    if (link === undefined) throw new AppError('invalid_token', 'This sign-in link is not valid.')
    if (link.used_at !== null) throw new AppError('invalid_token', 'This sign-in link has already been used.')
    throw new AppError('invalid_token', 'This sign-in link has expired. Request a new one.')
  }

  async function me (actor: Actor): Promise<User> {
    // The request's own authentication has just cached the session with its user.
    const cached = validSessions.get(actor.sessionId, clock.now().getTime())
    if (cached !== undefined && cached.userId === actor.userId) return cached.user
    const row = await findUserById(db, actor.userId)
    if (row === undefined) throw new AppError('unauthenticated', 'Account no longer exists')
    return toUser(row)
  }

  return {
    me,

    /** After a change to a user row commits: this instance forgets its copies now, the others on the signal. */
    async userChanged (userId: string): Promise<void> {
      validSessions.forgetUser(userId)
      await sessionSignals.userChanged(userId)
    },

    /** Always succeeds for a well-formed address, known or not (no enumeration). */
    async requestLogin (input: unknown, options: { poll: boolean }): Promise<{ pollToken?: string, expiresAt: string }> {
      const { email } = parseInput(RequestLoginInput, input)
      const address = normaliseEmail(email)
      const now = clock.now()
      const token = newSecretToken()
      const pollToken = options.poll ? newSecretToken() : undefined
      const expiresAt = later(now, LINK_TTL_MS)
      const tokenHash = hashToken(token)
      await repo.insertLoginLink(db, { tokenHash, pollHash: pollToken === undefined ? null : hashToken(pollToken), email: address, now, expiresAt })
      const link = `${config.appUrl}/api/auth/authorize?token=${token}`
      await sendOrUndo(deps, {
        to: address,
        subject: 'Your sign-in link',
        text: `Sign in to Canvas by opening this link within 10 minutes:\n\n${link}\n\nIf you did not ask for it, ignore this message.\n`
      }, async () => { await repo.deleteLoginLink(db, tokenHash) })
      return { ...(pollToken === undefined ? {} : { pollToken }), expiresAt: expiresAt.toISOString() }
    },

    /** Describes a pending link without using it. */
    async getAuthorizeInfo (input: unknown): Promise<{ email: string, expiresAt: string, newAccount: boolean }> {
      const { token } = parseInput(TokenInput, input)
      const link = await repo.findLoginLink(db, hashToken(token))
      if (link === undefined) throw new AppError('invalid_token', 'This sign-in link is not valid.')
      if (link.used_at !== null) throw new AppError('invalid_token', 'This sign-in link has already been used.')
      if (link.expires_at <= clock.now()) throw new AppError('invalid_token', 'This sign-in link has expired. Request a new one.')
      return { email: link.email, expiresAt: link.expires_at.toISOString(), newAccount: await findUserIdByEmail(db, link.email) === undefined }
    },

    /** RPC: redeems the link, which completes the poll of the client that requested it. */
    async authorizeLogin (input: unknown): Promise<{ email: string }> {
      const { token } = parseInput(TokenInput, input)
      const user = await redeemLink(token)
      return { email: user.email }
    },

    /** Browser: redeems the link and opens a cookie session (a signed JWT for `app_session`). */
    async signInWithLink (input: unknown): Promise<{ user: User, sessionToken: string, maxAgeSeconds: number }> {
      const { token } = parseInput(TokenInput, input)
      const user = await redeemLink(token)
      const now = clock.now()
      const sessionId = newId('ses')
      const expiresAt = later(now, COOKIE_SESSION_TTL_MS)
      if (!await repo.insertSession(db, { id: sessionId, userId: user.id, kind: 'cookie', now, expiresAt })) throw accountBeingDeleted()
      return {
        user,
        sessionToken: codec.sign({ userId: user.id, sessionId, expiresAt, issuedAt: now }),
        maxAgeSeconds: COOKIE_SESSION_TTL_MS / 1000
      }
    },

    async pollLoginStatus (input: unknown): Promise<LoginPoll> {
      const { pollToken } = parseInput(PollInput, input)
      const pollHash = hashToken(pollToken)
      const now = clock.now()
      const link = await repo.findLoginLinkByPoll(db, pollHash)
      if (link === undefined) throw new AppError('invalid_token', 'Unknown poll token.')
      if (link.poll_delivered_at !== null) throw new AppError('invalid_token', 'This login was already completed; its tokens were handed out.')
      if (link.user_id === null) {
        if (link.expires_at <= now) throw new AppError('invalid_token', 'This login request has expired. Request a new one.')
        return { status: 'PENDING' }
      }
      if (later(link.expires_at, POLL_GRACE_MS) <= now) throw new AppError('invalid_token', 'This login request has expired. Request a new one.')
      const tokens = await db.transaction().execute(async (trx) => {
        const delivered = await repo.markPollDelivered(trx, pollHash, now)
        if (delivered === undefined) return undefined
        const sessionId = newId('ses')
        if (!await repo.insertSession(trx, { id: sessionId, userId: delivered.user_id, kind: 'rpc', now, expiresAt: later(now, REFRESH_TOKEN_TTL_MS) })) throw accountBeingDeleted()
        return { userId: delivered.user_id, sessionId }
      })
      if (tokens === undefined) throw new AppError('invalid_token', 'This login was already completed; its tokens were handed out.')
      return { status: 'COMPLETED', ...await issueTokenPair(tokens.userId, tokens.sessionId, now) }
    },

    /** Rotates a refresh token. A used token presented again revokes its whole session. */
    async refreshToken (input: unknown): Promise<TokenPair> {
      const { refreshToken } = parseInput(RefreshInput, input)
      const tokenHash = hashToken(refreshToken)
      const now = clock.now()
      const found = await repo.findRefreshToken(db, tokenHash)
      if (found === undefined) throw new AppError('unauthenticated', 'Invalid refresh token.')
      if (found.revoked_at !== null) throw new AppError('unauthenticated', 'This session has been revoked.')
      if (found.used_at !== null || await repo.consumeRefreshToken(db, tokenHash, now) === undefined) {
        await endSession(found.session_id, now)
        log.warn({ sessionId: found.session_id }, 'refresh token reuse: session revoked')
        throw new AppError('unauthenticated', 'Refresh token reuse detected; the session has been revoked.')
      }
      if (found.expires_at <= now) throw new AppError('session_expired', 'Session expired')
      return await issueTokenPair(found.user_id, found.session_id, now)
    },

    /** Resolves a cookie or Bearer JWT to its caller; the session must exist, be unrevoked and unexpired. */
    async authenticate (token: string): Promise<Actor> {
      const claims = codec.verify(token)
      if (claims === undefined) throw new AppError('unauthenticated', 'Invalid token')
      const now = clock.now()
      if (claims.exp * 1000 <= now.getTime()) throw new AppError('session_expired', 'Session expired')
      // A session found revoked or absent once stays so: no database read for a replayed dead token.
      if (validSessions.refusal(claims.sid) !== undefined) throw new AppError('unauthenticated', 'Session revoked')
      let session: { userId: string, expiresAt: Date, suspended: boolean } | undefined = validSessions.get(claims.sid, now.getTime())
      if (session === undefined) {
        const record = await validSessions.load(claims.sid)
        if (record === undefined || record.revokedAt !== null) throw new AppError('unauthenticated', 'Session revoked')
        if (record.expiresAt <= now) throw new AppError('session_expired', 'Session expired')
        session = record
      }
      if (session.userId !== claims.sub) throw new AppError('unauthenticated', 'Session revoked')
      const actor: Actor = { userId: claims.sub, sessionId: claims.sid, expiresAt: new Date(Math.min(claims.exp * 1000, session.expiresAt.getTime())) }
      return session.suspended ? { ...actor, suspended: true } : actor
    },

    async logout (actor: Actor): Promise<void> {
      await endSession(actor.sessionId, clock.now())
    },

    async requestDeletion (actor: Actor): Promise<{ expiresAt: string }> {
      const user = await me(actor)
      const token = newSecretToken()
      const tokenHash = hashToken(token)
      const expiresAt = later(clock.now(), DELETION_TOKEN_TTL_MS)
      await repo.insertDeletionToken(db, { tokenHash, userId: user.id, expiresAt })
      await sendOrUndo(deps, {
        to: user.email,
        subject: 'Confirm the deletion of your account',
        text: `Someone (hopefully you) asked to delete your Canvas account and all its data.\n\nTo confirm, open this link within 60 minutes:\n\n${config.appUrl}/account/confirm-deletion?token=${token}\n\nIf you did not ask for it, ignore this message and nothing happens.\n`
      }, async () => { await repo.deleteDeletionToken(db, tokenHash) })
      return { expiresAt: expiresAt.toISOString() }
    },

    /** Permanently removes the account and everything it owns: first, with the token, a short
     *  transaction that marks it and revokes its sessions; then the rest in bounded batches
     *  (users/account-deletion.ts), finished by the service if this request cannot. */
    async confirmDeletion (input: unknown): Promise<{ userId: string }> {
      const { token } = parseInput(TokenInput, input)
      const now = clock.now()
      const userId = await inTransaction(deps, async ({ trx }) => {
        const consumed = await repo.consumeDeletionToken(trx, hashToken(token), now)
        if (consumed === undefined || !await markForDeletion(trx, consumed.user_id, now)) return undefined
        return consumed.user_id
      })
      if (userId === undefined) throw new AppError('invalid_token', 'This deletion link is not valid, was already used or has expired.')
      // The account's streams end and its sessions are refused on every instance from now on.
      validSessions.forgetUser(userId)
      await sessionSignals.accountDeleted(userId)
      await completeAccountDeletion(deps, userId)
      return { userId }
    },

    getConfig (): { appUrl: string, accessTokenTtlSeconds: number, refreshTokenTtlSeconds: number, rtcEnabled: boolean, version: string } {
      return {
        appUrl: config.appUrl,
        accessTokenTtlSeconds: ACCESS_TOKEN_TTL_MS / 1000,
        refreshTokenTtlSeconds: REFRESH_TOKEN_TTL_MS / 1000,
        rtcEnabled: config.rtcAppId !== undefined,
        version: config.version
      }
    },

    ping (input: unknown): { message: string, timestamp: string } {
      const { message } = parseInput(PingInput, input)
      return { message, timestamp: clock.now().toISOString() }
    }
  }
}

export type Auth = ReturnType<typeof createAuth>
