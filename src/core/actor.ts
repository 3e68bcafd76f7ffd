/** Who is calling: a signed-in user in one session. Operations that allow anonymous callers take `Actor | null`. */
export interface Actor {
  readonly userId: string
  readonly sessionId: string
  /** When the presented credential stops being valid (JWT expiry or session expiry, whichever is first). */
  readonly expiresAt?: Date
  /** The account is suspended (DECISIONS §11): the gate lets only SUSPENDED_MAY_CALL operations through. */
  readonly suspended?: boolean
}

/**
 * An administrator, as the admin API (DECISIONS §12) verified them from the identity provider's
 * token: admin-facing core operations (src/core/moderation/) take one, and record `sub` as who acted.
 */
export interface AdminActor {
  readonly sub: string
  readonly email: string | null
  readonly role: 'admin' | 'super_admin'
  readonly requestId: string
}
