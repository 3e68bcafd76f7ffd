// Input schemas of sign-in and account operations, shared by REST (route schemas) and RPC (core validation).
import { Type } from 'typebox'

export const LINK_TTL_MS = 10 * 60_000
/** A completed login can be collected by its poller this long after the link itself expired. */
export const POLL_GRACE_MS = 10 * 60_000
export const ACCESS_TOKEN_TTL_MS = 15 * 60_000
export const REFRESH_TOKEN_TTL_MS = 30 * 24 * 3600_000
export const COOKIE_SESSION_TTL_MS = 30 * 24 * 3600_000
export const DELETION_TOKEN_TTL_MS = 60 * 60_000

export const Email = Type.String({
  maxLength: 254,
  // Each domain label is bounded by dots its character class excludes, so a string matches in at
  // most one way and refusing one takes time linear in its length (the earlier pattern,
  // `[^\s@]+\.[^\s@]+$` for the domain, backtracked quadratically on a string of dots).
  pattern: '^[^\\s@]+@[^\\s@.]+(\\.[^\\s@.]+)+$',
  errorMessage: 'must be a valid e-mail address'
})

const Token = Type.String({ minLength: 1, maxLength: 512, errorMessage: 'must be a non-empty token' })

export const RequestLoginInput = Type.Object({ email: Email }, { additionalProperties: false })
export const TokenInput = Type.Object({ token: Token }, { additionalProperties: false })
export const PollInput = Type.Object({ pollToken: Token }, { additionalProperties: false })
export const RefreshInput = Type.Object({ refreshToken: Token }, { additionalProperties: false })
export const PingInput = Type.Object({ message: Type.String({ maxLength: 1000 }) })

export type LoginPoll =
  | { status: 'PENDING' }
  | { status: 'COMPLETED', accessToken: string, refreshToken: string, expiresAt: string }

export interface TokenPair {
  accessToken: string
  refreshToken: string
  expiresAt: string
}
