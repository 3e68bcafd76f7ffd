// Every environment variable the service reads, parsed and validated once at start.
// A bad value stops start-up with an error naming the variable (DECISIONS §1).
import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join, resolve } from 'node:path'

export type Expose = 'all' | 'public' | 'internal'
export type NodeEnv = 'development' | 'production' | 'test'

export interface Config {
  readonly nodeEnv: NodeEnv
  readonly port: number
  readonly host: string
  readonly expose: Expose
  readonly dataDir: string
  readonly databaseUrl: string | undefined
  readonly redisUrl: string | undefined
  readonly appUrl: string
  readonly corsOrigin: string
  readonly jwtSecret: string
  /** Fastify `trustProxy`: false (socket address only), true, or a comma-separated IP/CIDR list. */
  readonly trustProxy: boolean | string
  /** Header a CDN puts the client address in; read first, and only from trusted peers. */
  readonly cdnIpHeader: string
  readonly smtpUrl: string | undefined
  readonly mailFrom: string
  readonly rateLimitMaxRequests: number
  readonly rateLimitWindowMs: number
  /** Prepended to every rate-limit counter key in Redis, so several deployments (or test runs) can share one Redis. */
  readonly rateLimitKeyPrefix: string
  readonly sseHeartbeatMs: number
  readonly rtcAppId: string | undefined
  readonly rtcAppCertificate: string | undefined
  readonly oidcIssuer: string | undefined
  readonly oidcAudience: string | undefined
  readonly oidcJwksUrl: string | undefined
  readonly logLevel: string
  /** Worker threads for CPU-heavy work (src/compute): layouts now, CV parsing later. */
  readonly computeThreads: number
  /** Tasks that may wait for a thread; past that a task is refused with 503 / `unavailable`. */
  readonly computeQueue: number
}

export class ConfigError extends Error {
  constructor (readonly variable: string, problem: string) {
    super(`${variable}: ${problem}`)
    this.name = 'ConfigError'
  }
}

type Env = Record<string, string | undefined>

function text (env: Env, name: string): string | undefined {
  const value = env[name]?.trim()
  return value === undefined || value === '' ? undefined : value
}

function integer (env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = text(env, name)
  if (raw === undefined) return fallback
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`)
  const value = Number(raw)
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`)
  return value
}

function oneOf<T extends string> (env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = text(env, name)
  if (raw === undefined) return fallback
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(name, `must be one of ${allowed.join(', ')}, got "${raw}"`)
  }
  return raw as T
}

function url (env: Env, name: string, protocols: readonly string[]): string | undefined {
  const raw = text(env, name)
  if (raw === undefined) return undefined
  let parsed: URL
  try {
    parsed = new URL(raw)
  } catch {
    throw new ConfigError(name, `must be a URL, got "${raw}"`)
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must use ${protocols.join(' or ')}, got "${parsed.protocol}"`)
  }
  return raw.replace(/\/+$/, '')
}

function trustProxy (env: Env): boolean | string {
  const raw = text(env, 'TRUST_PROXY')
  if (raw === undefined || raw === 'false') return false
  if (raw === 'true') return true
  const ipOrCidr = /^[0-9a-fA-F:.]+(\/\d{1,3})?$/
  for (const part of raw.split(',').map((p) => p.trim())) {
    if (!ipOrCidr.test(part)) throw new ConfigError('TRUST_PROXY', `"${part}" is not an IP address or CIDR range`)
  }
  return raw
}

function keyPrefix (env: Env, name: string, fallback: string): string {
  const raw = text(env, name)
  if (raw === undefined) return fallback
  if (!/^[A-Za-z0-9:_.-]{1,64}$/.test(raw)) throw new ConfigError(name, `must be 1 to 64 letters, digits or ":_.-", got "${raw}"`)
  return raw
}

/** Outside production the secret is generated once and kept in DATA_DIR, so sessions survive restarts. */
function jwtSecret (env: Env, nodeEnv: NodeEnv, dataDir: string): string {
  const raw = text(env, 'JWT_SECRET')
  if (raw !== undefined) {
    if (raw.length < 32) throw new ConfigError('JWT_SECRET', 'must be at least 32 characters')
    return raw
  }
  if (nodeEnv === 'production') throw new ConfigError('JWT_SECRET', 'is required when NODE_ENV=production')
  const file = join(dataDir, 'jwt-secret')
  if (existsSync(file)) return readFileSync(file, 'utf8').trim()
  mkdirSync(dataDir, { recursive: true })
  const secret = randomBytes(48).toString('base64url')
  writeFileSync(file, secret, { mode: 0o600 })
  return secret
}

export function loadConfig (env: Env = process.env): Config {
  const nodeEnv = oneOf<NodeEnv>(env, 'NODE_ENV', ['development', 'production', 'test'], 'development')
  const port = integer(env, 'PORT', 8080, 0, 65535)
  // One core is left to the event loop, which answers every request.
  const computeThreads = integer(env, 'COMPUTE_THREADS', Math.max(1, availableParallelism() - 1), 1, 256)
  const dataDir = resolve(text(env, 'DATA_DIR') ?? './data')
  const appUrl = url(env, 'APP_URL', ['http:', 'https:']) ?? `http://localhost:${port}`
  const config: Config = {
    nodeEnv,
    port,
    host: text(env, 'HOST') ?? '0.0.0.0',
    expose: oneOf<Expose>(env, 'EXPOSE', ['all', 'public', 'internal'], 'all'),
    dataDir,
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    redisUrl: url(env, 'REDIS_URL', ['redis:', 'rediss:']),
    appUrl,
    corsOrigin: url(env, 'CORS_ORIGIN', ['http:', 'https:']) ?? new URL(appUrl).origin,
    jwtSecret: jwtSecret(env, nodeEnv, dataDir),
    trustProxy: trustProxy(env),
    cdnIpHeader: (text(env, 'CDN_IP_HEADER') ?? 'cf-connecting-ip').toLowerCase(),
    smtpUrl: url(env, 'SMTP_URL', ['smtp:', 'smtps:']),
    mailFrom: text(env, 'MAIL_FROM') ?? 'Canvas <no-reply@localhost>',
    rateLimitMaxRequests: integer(env, 'RATE_LIMIT_MAX_REQUESTS', 200, 1, 1_000_000),
    rateLimitWindowMs: integer(env, 'RATE_LIMIT_WINDOW_MS', 60_000, 100, 86_400_000),
    rateLimitKeyPrefix: keyPrefix(env, 'RATE_LIMIT_KEY_PREFIX', 'rl:'),
    sseHeartbeatMs: integer(env, 'SSE_HEARTBEAT_MS', 30_000, 10, 3_600_000),
    rtcAppId: text(env, 'RTC_APP_ID'),
    rtcAppCertificate: text(env, 'RTC_APP_CERTIFICATE'),
    oidcIssuer: url(env, 'OIDC_ISSUER', ['http:', 'https:']),
    oidcAudience: text(env, 'OIDC_AUDIENCE'),
    oidcJwksUrl: url(env, 'OIDC_JWKS_URL', ['http:', 'https:']),
    logLevel: oneOf(env, 'LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], nodeEnv === 'test' ? 'silent' : 'info'),
    computeThreads,
    // A few tasks per thread absorb a burst; a longer queue would only make callers wait for
    // answers they may have given up on.
    computeQueue: integer(env, 'COMPUTE_QUEUE', 4 * computeThreads, 1, 100_000)
  }
  if ((config.rtcAppId === undefined) !== (config.rtcAppCertificate === undefined)) {
    throw new ConfigError(config.rtcAppId === undefined ? 'RTC_APP_ID' : 'RTC_APP_CERTIFICATE', 'RTC_APP_ID and RTC_APP_CERTIFICATE must be set together')
  }
  return Object.freeze(config)
}
