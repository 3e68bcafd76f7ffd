// Verifying an admin's access token (DECISIONS §12): signed by one of the provider's keys with an
// asymmetric algorithm, `iss` exactly OIDC_ISSUER, `aud` containing OIDC_AUDIENCE, `exp` present and
// not past (give or take the clock tolerance), a `sub`. The roles come from OIDC_ROLES_CLAIM.
//
// An access token, not an ID token (DECISIONS §17): a JOSE `typ` other than `at+jwt` (RFC 9068) or
// `JWT` is refused, and so is a token carrying `nonce`, which only ID tokens carry (OIDC Core 2).
// An ID token of the dashboard's client is signed by the same provider and may satisfy `aud` when
// OIDC_AUDIENCE is misconfigured as that client id; it must never open the admin API.
//
// The algorithm allow-list is what defeats `alg: none` and the HS256-with-the-public-key trick: jose
// checks a token's `alg` against it before it looks for a key, so such a token never reaches one.
import { errors, jwtVerify, type JWTPayload } from 'jose'
import type { OidcConfig } from '../../config.js'
import type { JwksCache } from '../../infra/jwks-cache.js'
import { JwksUnavailableError } from '../../infra/jwks-cache.js'
import type { Logger } from '../../infra/logger.js'
import { AppError } from '../errors.js'
import type { AdminRole } from './admin.types.js'

/** Asymmetric signatures only: no `none`, no HS* (a shared secret the provider would have to give us). */
export const ADMIN_TOKEN_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519']

/** Seconds of clock skew between us and the provider that `exp`, `nbf` and `iat` forgive (at most 60). */
export const CLOCK_TOLERANCE_SECONDS = 30

/** `typ` values of an access token, compared as RFC 7515 §4.1.9 says: case-insensitively, `application/` optional. */
const ACCESS_TOKEN_TYPES = new Set(['at+jwt', 'jwt'])

/** Why a verified token is still not an access token, or null when it is one. */
function notAnAccessToken (typ: unknown, payload: JWTPayload): string | null {
  if (typ !== undefined) {
    const type = typeof typ === 'string' ? typ.toLowerCase().replace(/^application\//, '') : ''
    if (!ACCESS_TOKEN_TYPES.has(type)) return 'ERR_JWT_TYP'
  }
  if (Object.hasOwn(payload, 'nonce')) return 'ERR_JWT_NONCE'
  return null
}

/** Who a verified token names, and the strongest admin role it carries (null: none). */
export interface AdminPrincipal {
  sub: string
  email: string | null
  role: AdminRole | null
}

/** A claim by its full name (Auth0's `https://example.com/roles`), else by its dotted path (`realm_access.roles`). */
export function claimAt (payload: JWTPayload, path: string): unknown {
  if (Object.hasOwn(payload, path)) return payload[path]
  let value: unknown = payload
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, part)) return undefined
    value = (value as Record<string, unknown>)[part]
  }
  return value
}

/** `super_admin` outranks `admin`; roles come as a list, or as one space-separated string. */
export function adminRoleOf (claim: unknown): AdminRole | null {
  const roles = Array.isArray(claim) ? claim.filter((r): r is string => typeof r === 'string') : typeof claim === 'string' ? claim.split(/\s+/) : []
  if (roles.includes('super_admin')) return 'super_admin'
  if (roles.includes('admin')) return 'admin'
  return null
}

export interface AdminTokens {
  verify (token: string): Promise<AdminPrincipal>
}

const REFUSED = 'A valid access token of the identity provider is required.'

export function createAdminTokens (oidc: OidcConfig, keys: JwksCache, log: Logger): AdminTokens {
  return {
    async verify (token) {
      let payload: JWTPayload
      let typ: unknown
      try {
        ({ payload, protectedHeader: { typ } } = await jwtVerify(token, keys.getKey, {
          issuer: oidc.issuer,
          audience: oidc.audience,
          algorithms: ADMIN_TOKEN_ALGORITHMS,
          clockTolerance: CLOCK_TOLERANCE_SECONDS,
          requiredClaims: ['exp', 'sub']
        }))
      } catch (error) {
        if (error instanceof JwksUnavailableError) {
          throw new AppError('unavailable', 'The identity provider cannot be reached to check the token; try again shortly.')
        }
        // Logged, not written to the audit table: an unauthenticated flood must not grow it (§12).
        const reason = error instanceof errors.JOSEError ? error.code : 'ERR_MALFORMED'
        log.info({ reason, detail: error instanceof Error ? error.message : String(error) }, 'admin token refused')
        throw new AppError('unauthenticated', REFUSED)
      }
      const notAccess = notAnAccessToken(typ, payload)
      if (notAccess !== null) {
        log.info({ reason: notAccess, typ: typeof typ === 'string' ? typ.slice(0, 64) : typ }, 'admin token refused: not an access token')
        throw new AppError('unauthenticated', REFUSED)
      }
      const sub = payload.sub
      if (typeof sub !== 'string' || sub === '' || sub.length > 255) throw new AppError('unauthenticated', REFUSED)
      const email = typeof payload.email === 'string' ? payload.email.slice(0, 320) : null
      return { sub, email, role: adminRoleOf(claimAt(payload, oidc.rolesClaim)) }
    }
  }
}
