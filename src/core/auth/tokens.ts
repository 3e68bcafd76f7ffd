// Signed JWTs for both transports: the cookie session (REST) and the access token (RPC) carry the
// user id (`sub`), the session id (`sid`) and an expiry. Validity also needs the session row.
import { randomBytes } from 'node:crypto'
import { createSigner, createVerifier } from 'fast-jwt'
import { isIdOf } from '../../infra/ids.js'

/** Read-only: the verified-token cache hands the same object to every request with that token. */
export interface TokenClaims {
  readonly sub: string
  readonly sid: string
  /** Expiry, Unix seconds. */
  readonly exp: number
}

/**
 * How many verified tokens are remembered (oldest forgotten first): at least as many as the callers an
 * instance serves at a time, because a verification costs ~25 µs (HMAC and JSON parse, about a third
 * of a whole cached `GET /api/auth/me`) and callers come round in turn, so with more of them than
 * entries every request pays it. About 4 MB when full (a ~250-byte token and its claims each).
 */
export const VERIFIED_CACHE_SIZE = 10_000

export interface TokenCodec {
  sign (claims: { userId: string, sessionId: string, expiresAt: Date, issuedAt: Date }): string
  /** The claims of a correctly signed token, expired or not; undefined for anything else. */
  verify (token: string): TokenClaims | undefined
}

export function createTokenCodec (secret: string): TokenCodec {
  const signer = createSigner({ key: secret, algorithm: 'HS256' })
  // Expiry is checked by the caller against the injected clock, so it can tell "expired" from "invalid".
  const verifier = createVerifier({ key: secret, algorithms: ['HS256'], ignoreExpiration: true })
  // Tokens already verified, under their exact text: a session presents the same token on every
  // request. fast-jwt's own cache keys entries by a SHA-256 of the token, which costs more (~2 µs)
  // than the lookup saves, and it warns at start-up about any other key.
  const verified = new Map<string, TokenClaims>()
  function remember (token: string, claims: TokenClaims): TokenClaims {
    if (verified.size >= VERIFIED_CACHE_SIZE) verified.delete(verified.keys().next().value ?? '')
    // Kept as a copy: the token is usually a slice of the whole Cookie or Authorization header,
    // which a key of this map would otherwise keep alive. (A signed token is ASCII; anything that
    // does not survive the copy unchanged is not remembered, so no other text can ever match it.)
    const copy = Buffer.from(token, 'latin1').toString('latin1')
    if (copy === token) verified.set(copy, claims)
    return claims
  }
  return {
    sign: ({ userId, sessionId, expiresAt, issuedAt }) => signer({
      sub: userId,
      sid: sessionId,
      // Unique per token, so two tokens minted in the same second still differ.
      jti: randomBytes(9).toString('base64url'),
      iat: Math.floor(issuedAt.getTime() / 1000),
      exp: Math.floor(expiresAt.getTime() / 1000)
    }),
    verify: (token) => {
      const known = verified.get(token)
      if (known !== undefined) return known
      try {
        const claims: unknown = verifier(token)
        if (typeof claims !== 'object' || claims === null) return undefined
        const { sub, sid, exp } = claims as Record<string, unknown>
        if (typeof sub !== 'string' || typeof sid !== 'string' || typeof exp !== 'number') return undefined
        // Only a holder of the secret can sign odd claims, but they must still never reach the
        // database as ids (a NUL byte there is a query error, not "no such session").
        if (!isIdOf('user', sub) || !isIdOf('ses', sid)) return undefined
        return remember(token, { sub, sid, exp })
      } catch {
        return undefined
      }
    }
  }
}
