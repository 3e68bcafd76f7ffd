// A local OIDC provider for the admin tests: a key pair generated at start, its discovery document and
// JWKS served on loopback, tokens signed in the test. No network. It can rotate its key and misbehave
// (down, slow, garbage) to show what the service does with a provider in trouble.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomUUID } from 'node:crypto'
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose'

export type ProviderMode = 'ok' | 'down' | 'slow' | 'garbage'

interface SigningKey { kid: string, privateKey: CryptoKey, publicJwk: JWK, publicPem: string }

export interface OidcProvider {
  /** The issuer (`iss`), also where discovery is served. */
  readonly issuer: string
  readonly audience: string
  /** How the provider answers from now on. */
  mode: ProviderMode
  /** JWKS requests received so far. */
  jwksFetches (): number
  /** A new signing key with a new `kid`; the JWKS serves only it from now on (or both with keepOld). */
  rotate (options?: { keepOld?: boolean }): Promise<void>
  /** A token signed with the current key: claims override the defaults (iss, aud, sub, email,
   *  roles, iat, exp in 5 minutes); a claim set to undefined is left out. The JOSE `typ` header is
   *  `JWT` unless `typ` says otherwise (null: no `typ` header). */
  sign (claims?: JWTPayload, options?: { kid?: string, typ?: string | null }): Promise<string>
  /** A token signed by a key the provider never published, under a made-up `kid`. */
  signWithForeignKey (claims?: JWTPayload): Promise<string>
  /** The current public key as PEM text: what an HS256 forger would use as the secret. */
  publicPem (): string
  close (): Promise<void>
}

async function newKey (): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
  const kid = `key-${randomUUID().slice(0, 8)}`
  return { kid, privateKey, publicJwk: { ...await exportJWK(publicKey), kid, alg: 'RS256', use: 'sig' }, publicPem: await exportSPKI(publicKey) }
}

export async function startOidcProvider (audience = 'canvas-admin'): Promise<OidcProvider> {
  let keys = [await newKey()]
  let fetches = 0
  let mode: ProviderMode = 'ok'
  const pending = new Set<NodeJS.Timeout>()
  let issuer = ''

  const server: Server = createServer((req, res) => {
    const answer = (): void => {
      if (mode === 'down') { res.writeHead(503).end('down'); return }
      if (mode === 'garbage') { res.writeHead(200, { 'content-type': 'application/json' }).end('{"keys": "not a key set"'); return }
      if (req.url === '/.well-known/openid-configuration') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks.json` }))
        return
      }
      if (req.url === '/jwks.json') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: keys.map((k) => k.publicJwk) }))
        return
      }
      res.writeHead(404).end()
    }
    if (req.url === '/jwks.json') fetches++
    if (mode === 'slow') {
      const timer = setTimeout(() => { pending.delete(timer); answer() }, 10_000)
      pending.add(timer)
      return
    }
    answer()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  /** Claims override the defaults; a claim set to undefined is left out of the token. */
  async function signWith (key: SigningKey, kid: string, claims: JWTPayload, typ: string | null = 'JWT'): Promise<string> {
    const now = Math.floor(Date.now() / 1000)
    return await new SignJWT({ iss: issuer, aud: audience, sub: 'admin-sub', email: 'admin@example.test', roles: ['admin'], iat: now, exp: now + 300, ...claims })
      .setProtectedHeader({ alg: 'RS256', kid, ...(typ === null ? {} : { typ }) })
      .sign(key.privateKey)
  }

  return {
    issuer,
    audience,
    get mode () { return mode },
    set mode (value) { mode = value },
    jwksFetches: () => fetches,
    async rotate (options = {}) {
      const fresh = await newKey()
      keys = options.keepOld === true ? [fresh, ...keys] : [fresh]
    },
    async sign (claims = {}, options = {}) {
      const key = keys[0]!
      return await signWith(key, options.kid ?? key.kid, claims, options.typ)
    },
    async signWithForeignKey (claims = {}) {
      const foreign = await newKey()
      return await signWith(foreign, foreign.kid, claims)
    },
    publicPem: () => keys[0]!.publicPem,
    async close () {
      for (const timer of pending) clearTimeout(timer)
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

/** `alg: none`: a header and claims, no signature. */
export function unsignedToken (claims: JWTPayload): string {
  const part = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url')
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(claims)}.`
}

/** HS256 keyed with the provider's public key text: the classic algorithm-confusion forgery. */
export async function hs256WithPublicKey (provider: OidcProvider, claims: JWTPayload): Promise<string> {
  return await new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .sign(new TextEncoder().encode(provider.publicPem()))
}
