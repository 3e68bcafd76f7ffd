/** Who is calling: a signed-in user in one session. Operations that allow anonymous callers take `Actor | null`. */
export interface Actor {
  readonly userId: string
  readonly sessionId: string
  /** When the presented credential stops being valid (JWT expiry or session expiry, whichever is first). */
  readonly expiresAt?: Date
}
