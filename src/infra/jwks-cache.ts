// The admin identity provider's signing keys (DECISIONS §12), fetched from its JWKS and kept.
//
// jose's own createRemoteJWKSet drops its keys when a refresh fails after they grow old, so a
// provider outage would lock every admin out; this keeps jose's key selection (createLocalJWKSet)
// and owns only the fetching:
// - the first use fetches (discovering the JWKS address from the issuer when none is configured);
//   concurrent callers share that one fetch, and each fetch gives up after `fetchTimeoutMs`;
// - a key id the set lacks (the provider rotated) refetches once, at most once per `cooldownMs`,
//   so a flood of tokens with made-up key ids costs the provider one request per cooldown;
// - a set older than `maxAgeMs` is refreshed in the background while the old one keeps answering;
// - a failed fetch (down, slow, garbage) keeps the keys already held; with none held the caller gets
//   `JwksUnavailableError` at once, and fetches again only after `cooldownMs` of failures have passed
//   since the last attempt (so a dead provider is not asked on every request).
import { createLocalJWKSet, errors, type FlattenedJWSInput, type JSONWebKeySet, type JWSHeaderParameters, type LocalJWKSet } from 'jose'
import type { Logger } from './logger.js'
import { logThrottled } from './throttled-log.js'

/** No key set is held and the provider cannot be reached: the caller answers 503, not 401. */
export class JwksUnavailableError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'JwksUnavailableError'
  }
}

export interface JwksTiming {
  /** A fetch (discovery or JWKS) gives up after this long. */
  fetchTimeoutMs: number
  /** At most one fetch for an unknown key id, and one retry after a failure, per this interval. */
  cooldownMs: number
  /** A set held this long is refreshed in the background on its next use. */
  maxAgeMs: number
}

export const DEFAULT_JWKS_TIMING: JwksTiming = { fetchTimeoutMs: 3_000, cooldownMs: 30_000, maxAgeMs: 10 * 60_000 }

export interface JwksSource {
  issuer: string
  /** Undefined: read `jwks_uri` from the issuer's discovery document. */
  jwksUrl: string | undefined
}

export interface JwksCache {
  /** The key for a token's header, in the shape jose's jwtVerify takes. */
  getKey (header: JWSHeaderParameters, token: FlattenedJWSInput): ReturnType<LocalJWKSet>
  /** How many fetches of the key set were made (benchmarks and tests count them). */
  fetches (): number
}

async function fetchJson (url: string, timeoutMs: number): Promise<unknown> {
  const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' }, redirect: 'error' })
  if (!response.ok) throw new Error(`${url} answered ${response.status}`)
  return await response.json()
}

export function createJwksCache (source: JwksSource, log: Logger, timing: JwksTiming = DEFAULT_JWKS_TIMING): JwksCache {
  let keys: LocalJWKSet | undefined
  let jwksUrl = source.jwksUrl
  let fetchedAt = -Infinity
  let attemptedAt = -Infinity
  let inFlight: Promise<void> | undefined
  let fetches = 0

  async function discover (): Promise<string> {
    // The issuer's discovery document (OpenID Connect Discovery 1.0 §4): its `issuer` must be ours.
    const address = `${source.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`
    const document = await fetchJson(address, timing.fetchTimeoutMs) as { issuer?: unknown, jwks_uri?: unknown } | null
    if (document?.issuer !== source.issuer) throw new Error(`${address}: issuer ${String(document?.issuer)} is not ${source.issuer}`)
    if (typeof document.jwks_uri !== 'string' || !/^https?:\/\//.test(document.jwks_uri)) throw new Error(`${address}: no jwks_uri`)
    return document.jwks_uri
  }

  function refresh (): Promise<void> {
    inFlight ??= (async () => {
      attemptedAt = Date.now()
      fetches++
      try {
        jwksUrl ??= await discover()
        // createLocalJWKSet refuses anything that is not a key set: garbage never replaces good keys.
        keys = createLocalJWKSet(await fetchJson(jwksUrl, timing.fetchTimeoutMs) as JSONWebKeySet)
        fetchedAt = Date.now()
      } catch (error) {
        logThrottled(log, 'warn', 'OIDC: fetching the signing keys failed', { err: error, issuer: source.issuer, keysHeld: keys !== undefined })
        throw error
      } finally {
        inFlight = undefined
      }
    })()
    return inFlight
  }

  const cooledDown = (): boolean => Date.now() - attemptedAt >= timing.cooldownMs

  return {
    async getKey (header, token) {
      if (keys === undefined) {
        if (inFlight === undefined && !cooledDown()) throw new JwksUnavailableError('the identity provider was not reachable moments ago')
        try {
          await refresh()
        } catch {
          throw new JwksUnavailableError('the identity provider cannot be reached')
        }
      } else if (Date.now() - fetchedAt >= timing.maxAgeMs && inFlight === undefined && cooledDown()) {
        refresh().catch(() => {}) // logged in refresh; the keys held keep answering
      }
      const held = keys as LocalJWKSet
      try {
        return await held(header, token)
      } catch (error) {
        if (!(error instanceof errors.JWKSNoMatchingKey) || !(inFlight !== undefined || cooledDown())) throw error
        try {
          await refresh()
        } catch {
          throw error // the provider is down: an unknown key stays unknown (401), the known ones work
        }
        return await (keys as LocalJWKSet)(header, token)
      }
    },
    fetches: () => fetches
  }
}
