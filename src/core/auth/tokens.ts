// Signed JWTs for both transports: the cookie session (REST) and the access token (RPC) carry the
// user id (`sub`), the session id (`sid`) and an expiry. Validity also needs the session row.
import { randomBytes } from 'node:crypto'
import { createSigner, createVerifier } from 'fast-jwt'
import { isIdOf } from '../../infra/ids.js'

export interface TokenClaims {
  sub: string
  sid: string
  /** Expiry, Unix seconds. */
  exp: number
}

export interface TokenCodec {
  sign (claims: { userId: string, sessionId: string, expiresAt: Date, issuedAt: Date }): string
  /** The claims of a correctly signed token, expired or not; undefined for anything else. */
  verify (token: string): TokenClaims | undefined
}

export function createTokenCodec (secret: string): TokenCodec {
  const signer = createSigner({ key: secret, algorithm: 'HS256' })
  // Expiry is checked by the caller against the injected clock, so it can tell "expired" from "invalid".
  const verifier = createVerifier({ key: secret, algorithms: ['HS256'], ignoreExpiration: true, cache: 1000 })
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
      try {
        const claims: unknown = verifier(token)
        if (typeof claims !== 'object' || claims === null) return undefined
        const { sub, sid, exp } = claims as Record<string, unknown>
        if (typeof sub !== 'string' || typeof sid !== 'string' || typeof exp !== 'number') return undefined
        // Only a holder of the secret can sign odd claims, but they must still never reach the
        // database as ids (a NUL byte there is a query error, not "no such session").
        if (!isIdOf('user', sub) || !isIdOf('ses', sid)) return undefined
        return { sub, sid, exp }
      } catch {
        return undefined
      }
    }
  }
}
