/** Who is calling: a signed-in user in one session. Operations that allow anonymous callers take `Actor | null`. */
export interface Actor {
  readonly userId: string
  readonly sessionId: string
  /** When the presented credential stops being valid (JWT expiry or session expiry, whichever is first). */
  readonly expiresAt?: Date
}

/** An administrator, known by a verified access token of the OIDC provider (DECISIONS §12), never by a session. */
export interface AdminActor {
  /** The token's `sub`: what the audit log names and rate limits count under. */
  readonly sub: string
  readonly email: string
  readonly role: 'admin' | 'super_admin'
  /** The request's id (X-Request-Id), carried into the audit rows it writes. */
  readonly requestId: string
}
