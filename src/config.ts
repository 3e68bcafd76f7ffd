// Every environment variable the service reads, parsed and validated once at start.
// A bad value stops start-up with an error naming the variable (DECISIONS §1).
import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join, resolve } from 'node:path'
import { proxyTrust } from './http/client-ip.js'
import type { HttpTimeouts } from './http/listener.js'
import type { StorageConfig } from './infra/storage.js'
import { packageVersion } from './infra/package-version.js'
import { tracingConfigured } from './infra/tracing.js'
import { parseRedisTarget, sentinelTarget, type RedisTarget } from './infra/redis-target.js'

export type Expose = 'all' | 'public' | 'internal'
export type NodeEnv = 'development' | 'production' | 'test'

export interface Config {
  readonly nodeEnv: NodeEnv
  readonly port: number
  readonly host: string
  readonly expose: Expose
  readonly dataDir: string
  readonly databaseUrl: string | undefined
  /** The tables' owner, for `npm run migrate` only (the service never connects with it): set, the
   *  service's DATABASE_URL may name a role without ownership (src/db/service-role.ts). */
  readonly databaseOwnerUrl: string | undefined
  /** The same database without a transaction pooler in between (DATABASE_DIRECT_URL, default
   *  DATABASE_URL): what needs a session of its own (LISTEN, migrations) connects here. */
  readonly databaseDirectUrl: string | undefined
  /** REDIS_URL as given: `redis://`, `rediss://` or a Sentinel set `redis+sentinel://…`. */
  readonly redisUrl: string | undefined
  /** Where the shared Redis is: REDIS_URL, or REDIS_SENTINELS + REDIS_SENTINEL_NAME (src/infra/redis.ts). */
  readonly redis: RedisTarget | undefined
  /** Connections of the Postgres pool that serves requests (the live delivery has its own few). */
  readonly databasePoolSize: number
  /** Postgres ends a session of ours whose transaction sits idle this long (0: never): an open
   *  transaction holds every instance's live events back (src/live/delivery-stall.ts). */
  readonly databaseIdleInTransactionTimeoutMs: number
  readonly appUrl: string
  readonly corsOrigin: string
  readonly jwtSecret: string
  /** Fastify `trustProxy`: false (socket address only), true, or a comma-separated IP/CIDR list. */
  readonly trustProxy: boolean | string
  /** The headers trusted proxies put the client address in, read in this order and only from
   *  TRUST_PROXY peers (lower case; `x-forwarded-for` is read as its nearest untrusted hop). */
  readonly clientIpHeaders: readonly string[]
  readonly smtpUrl: string | undefined
  readonly mailFrom: string
  readonly rateLimitMaxRequests: number
  readonly rateLimitWindowMs: number
  /** Prepended to every rate-limit counter key in Redis, so several deployments (or test runs) can share one Redis. */
  readonly rateLimitKeyPrefix: string
  readonly sseHeartbeatMs: number
  /** An event stream whose client takes nothing this long while at least 1 MiB waits for it is cut
   *  off (DECISIONS §17: 30 s). Not read from the environment: tests build a config with a shorter one. */
  readonly sseStallMs: number
  readonly rtcAppId: string | undefined
  readonly rtcAppCertificate: string | undefined
  /** The admin identity provider (DECISIONS §12); undefined: admin routes answer 503. */
  readonly oidc: OidcConfig | undefined
  readonly logLevel: string
  /** The service's version (package.json), told to clients by GetConfig. */
  readonly version: string
  /** What a client connection may cost in time (src/http/listener.ts). */
  readonly http: HttpTimeouts
  /** PEM certificate chain and key from TLS_CERT_FILE / TLS_KEY_FILE: HTTPS with ALPN h2 / http/1.1. */
  readonly tls: { cert: Buffer, key: Buffer } | undefined
  /** On SIGTERM, how long the instance serves on with /health answering 503 `draining` before the
   *  listener closes, so load balancers stop sending to it first (src/server.ts). */
  readonly shutdownDelayMs: number
  /** Worker threads for CPU-heavy work (src/compute), and as many CV parser processes. */
  readonly computeThreads: number
  /** Tasks that may wait for a thread; past that a task is refused with 503 / `unavailable`. */
  readonly computeQueue: number
  /** What one CV parse may use in all (heap, buffers, unpacked streams), in MiB: each parser child
   *  process runs under this limit (src/compute/child-pool.ts, DECISIONS §17). */
  readonly cvParseMemoryMb: number
  /** Where uploads are kept: DATA_DIR/uploads, or an S3-compatible bucket when S3_BUCKET is set. */
  readonly storage: StorageConfig
  /** What one user's uploads may weigh in all (DECISIONS §16); an upload that would pass it is 413
   *  `QuotaExceeded` and nothing of it is kept. */
  readonly uploadQuotaBytes: number
  /** Plain Connect unary calls take the gateway's own routes (src/rpc/README.md); false: every call
   *  goes through @connectrpc/connect-fastify. */
  readonly rpcPlainUnary: boolean
  /** Where `GET /metrics` (Prometheus text) is served: never the public port; undefined: no metrics. */
  readonly metricsPort: number | undefined
  /** The address the metrics listener binds (METRICS_HOST): loopback unless an operator opens it. */
  readonly metricsHost: string
  /** Traces are exported over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT (or its _TRACES_ form) is set
   *  and OTEL_SDK_DISABLED is not `true`; the SDK reads its own variables (src/infra/tracing.ts). */
  readonly tracing: boolean
}

export interface OidcConfig {
  /** `iss` must equal it exactly (a trailing slash is kept: Auth0's issuers end with one). */
  readonly issuer: string
  /** `aud` must contain it. */
  readonly audience: string
  /** The key set; undefined: discovered from the issuer's `/.well-known/openid-configuration`. */
  readonly jwksUrl: string | undefined
  /** Where the roles are in the token: a claim name, or a dotted path (`realm_access.roles`). */
  readonly rolesClaim: string
}

export class ConfigError extends Error {
  constructor (readonly variable: string, problem: string) {
    super(`${variable}: ${problem}`)
    this.name = 'ConfigError'
  }
}

type Env = Record<string, string | undefined>

const GiB = 1024 ** 3

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

/** Checked by the parser Fastify itself uses (@fastify/proxy-addr), so the two never disagree. */
function trustProxy (env: Env): boolean | string {
  const raw = text(env, 'TRUST_PROXY')
  if (raw === undefined || raw === 'false') return false
  if (raw === 'true') return true
  try {
    proxyTrust(raw)
  } catch (error) {
    throw new ConfigError('TRUST_PROXY', `"${raw}" is not a list of IP addresses and CIDR ranges: ${(error as Error).message}`)
  }
  return raw
}

/** SPEC Limits rule 2's order: the CDN's header, X-Real-IP, X-Forwarded-For. */
const CLIENT_IP_HEADERS_DEFAULT = 'cf-connecting-ip,x-real-ip,x-forwarded-for'

function clientIpHeaders (env: Env): string[] {
  // Its one header is now a name in the list: a deployment still setting it must not lose it unseen.
  if (text(env, 'CDN_IP_HEADER') !== undefined) {
    throw new ConfigError('CDN_IP_HEADER', `is no longer read: CLIENT_IP_HEADERS replaces it — list the headers your trusted proxies set, in the order to read them (default ${CLIENT_IP_HEADERS_DEFAULT}; behind a proxy that only appends X-Forwarded-For: x-forwarded-for)`)
  }
  const raw = text(env, 'CLIENT_IP_HEADERS') ?? CLIENT_IP_HEADERS_DEFAULT
  const names = raw.split(',').map((name) => name.trim().toLowerCase())
  for (const name of names) {
    if (!/^[a-z0-9!#$%&'*+.^_`|~-]{1,64}$/.test(name)) throw new ConfigError('CLIENT_IP_HEADERS', `must be a comma-separated list of header names, got "${raw}"`)
  }
  if (new Set(names).size !== names.length) throw new ConfigError('CLIENT_IP_HEADERS', `names a header twice: "${raw}"`)
  return names
}

function keyPrefix (env: Env, name: string, fallback: string): string {
  const raw = text(env, name)
  if (raw === undefined) return fallback
  if (!/^[A-Za-z0-9:_.-]{1,64}$/.test(raw)) throw new ConfigError(name, `must be 1 to 64 letters, digits or ":_.-", got "${raw}"`)
  return raw
}

function pemFile (env: Env, name: string): Buffer | undefined {
  const path = text(env, name)
  if (path === undefined) return undefined
  let content: Buffer
  try {
    content = readFileSync(path)
  } catch (error) {
    throw new ConfigError(name, `cannot read "${path}": ${(error as Error).message}`)
  }
  if (!content.includes('-----BEGIN ')) throw new ConfigError(name, `"${path}" is not a PEM file`)
  return content
}

function tlsFiles (env: Env): Config['tls'] {
  const cert = pemFile(env, 'TLS_CERT_FILE')
  const key = pemFile(env, 'TLS_KEY_FILE')
  if ((cert === undefined) !== (key === undefined)) {
    throw new ConfigError(cert === undefined ? 'TLS_CERT_FILE' : 'TLS_KEY_FILE', 'TLS_CERT_FILE and TLS_KEY_FILE must be set together')
  }
  return cert === undefined || key === undefined ? undefined : { cert, key }
}

/** Defaults: README, Configuration. Keep-alive outlasts a load balancer's usual 60 s idle timeout,
 *  so the balancer, not this server, closes an idle connection (no request lost to a race). */
function httpTimeouts (env: Env): HttpTimeouts {
  const headersMs = integer(env, 'HTTP_HEADERS_TIMEOUT_MS', 10_000, 100, 600_000)
  const requestMs = integer(env, 'HTTP_REQUEST_TIMEOUT_MS', 120_000, 100, 3_600_000)
  if (headersMs > requestMs) throw new ConfigError('HTTP_HEADERS_TIMEOUT_MS', `must not exceed HTTP_REQUEST_TIMEOUT_MS (${requestMs})`)
  return {
    headersMs,
    requestMs,
    bodyIdleMs: integer(env, 'HTTP_BODY_IDLE_TIMEOUT_MS', 30_000, 100, 3_600_000),
    keepAliveMs: integer(env, 'HTTP_KEEP_ALIVE_TIMEOUT_MS', 72_000, 100, 3_600_000),
    idleMs: integer(env, 'HTTP_IDLE_TIMEOUT_MS', 120_000, 100, 3_600_000)
  }
}

function flag (env: Env, name: string): boolean | undefined {
  const raw = text(env, name)
  if (raw === undefined) return undefined
  if (raw !== 'true' && raw !== 'false') throw new ConfigError(name, `must be true or false, got "${raw}"`)
  return raw === 'true'
}

/** DATA_DIR/uploads, or the bucket S3_BUCKET names. The AWS SDK's own environment and file lookups
 *  are not relied on for what is set here: region and keys are handed to the client explicitly.
 *  Without keys the SDK's default chain applies (an instance or task role). */
function storage (env: Env, dataDir: string): StorageConfig {
  const bucket = text(env, 'S3_BUCKET')
  if (bucket === undefined) {
    for (const name of ['S3_ENDPOINT', 'S3_REGION', 'S3_FORCE_PATH_STYLE', 'S3_KEY_PREFIX']) {
      if (text(env, name) !== undefined) throw new ConfigError(name, 'has no effect without S3_BUCKET')
    }
    // The embedded database lives in DATA_DIR too: uploads stop (503) while the file system has
    // less than this free, so they can never take the database's last byte.
    return { kind: 'local', dir: join(dataDir, 'uploads'), reserveBytes: integer(env, 'UPLOAD_DISK_RESERVE_BYTES', GiB, 0, Number.MAX_SAFE_INTEGER) }
  }
  if (text(env, 'UPLOAD_DISK_RESERVE_BYTES') !== undefined) throw new ConfigError('UPLOAD_DISK_RESERVE_BYTES', 'has no effect with S3_BUCKET (it guards local disk)')
  // S3's own naming rules are stricter; S3-compatible servers differ, so only what would break a URL is refused.
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{1,254}$/.test(bucket)) throw new ConfigError('S3_BUCKET', `must be a bucket name (letters, digits, ".", "_", "-"), got "${bucket}"`)
  const endpoint = url(env, 'S3_ENDPOINT', ['http:', 'https:'])
  const region = text(env, 'S3_REGION') ?? 'us-east-1'
  if (!/^[a-z0-9-]{1,64}$/.test(region)) throw new ConfigError('S3_REGION', `must be a region name such as eu-west-1, got "${region}"`)
  const accessKeyId = text(env, 'AWS_ACCESS_KEY_ID')
  const secretAccessKey = text(env, 'AWS_SECRET_ACCESS_KEY')
  const sessionToken = text(env, 'AWS_SESSION_TOKEN')
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) {
    throw new ConfigError(accessKeyId === undefined ? 'AWS_ACCESS_KEY_ID' : 'AWS_SECRET_ACCESS_KEY', 'AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together')
  }
  if (sessionToken !== undefined && accessKeyId === undefined) throw new ConfigError('AWS_SESSION_TOKEN', 'needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY')
  // Set but empty: no prefix (the bucket is the service's alone).
  const keyPrefix = env.S3_KEY_PREFIX === undefined ? 'uploads/' : env.S3_KEY_PREFIX.trim()
  if (!/^[A-Za-z0-9!_.*'()/-]{0,200}$/.test(keyPrefix)) throw new ConfigError('S3_KEY_PREFIX', `must be at most 200 letters, digits or "/!_.*'()-", got "${keyPrefix}"`)
  return {
    kind: 's3',
    bucket,
    region,
    endpoint,
    // Self-hosted S3-compatible servers (MinIO and the like) mostly serve path-style URLs only.
    forcePathStyle: flag(env, 'S3_FORCE_PATH_STYLE') ?? endpoint !== undefined,
    credentials: accessKeyId === undefined || secretAccessKey === undefined ? undefined : { accessKeyId, secretAccessKey, ...(sessionToken === undefined ? {} : { sessionToken }) },
    keyPrefix
  }
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

/** OIDC_ISSUER and OIDC_AUDIENCE turn admin sign-in on, together; the rest needs them. */
function oidc (env: Env): OidcConfig | undefined {
  // Checked as a URL, but kept as written: `iss` is compared with it character for character.
  const issuer = text(env, 'OIDC_ISSUER')
  if (issuer !== undefined) url(env, 'OIDC_ISSUER', ['http:', 'https:'])
  const audience = text(env, 'OIDC_AUDIENCE')
  const jwksUrl = url(env, 'OIDC_JWKS_URL', ['http:', 'https:'])
  const rolesClaim = text(env, 'OIDC_ROLES_CLAIM')
  if (issuer === undefined || audience === undefined) {
    const missing = issuer === undefined ? 'OIDC_ISSUER' : 'OIDC_AUDIENCE'
    if (issuer !== undefined || audience !== undefined) throw new ConfigError(missing, 'OIDC_ISSUER and OIDC_AUDIENCE must be set together')
    for (const [name, value] of [['OIDC_JWKS_URL', jwksUrl], ['OIDC_ROLES_CLAIM', rolesClaim]] as const) {
      if (value !== undefined) throw new ConfigError(name, 'needs OIDC_ISSUER and OIDC_AUDIENCE')
    }
    return undefined
  }
  if (rolesClaim !== undefined && !/^[^.\s]+(\.[^.\s]+)*$/.test(rolesClaim)) {
    throw new ConfigError('OIDC_ROLES_CLAIM', `must be a claim name or a dotted path such as realm_access.roles, got "${rolesClaim}"`)
  }
  return { issuer, audience, jwksUrl, rolesClaim: rolesClaim ?? 'roles' }
}

/** REDIS_URL (one server, or a Sentinel set as `redis+sentinel://`), or REDIS_SENTINELS + REDIS_SENTINEL_NAME. */
function redis (env: Env): RedisTarget | undefined {
  const raw = text(env, 'REDIS_URL')
  const sentinels = text(env, 'REDIS_SENTINELS')
  const name = text(env, 'REDIS_SENTINEL_NAME')
  if (raw !== undefined && (sentinels !== undefined || name !== undefined)) {
    throw new ConfigError(sentinels !== undefined ? 'REDIS_SENTINELS' : 'REDIS_SENTINEL_NAME', 'set either REDIS_URL or REDIS_SENTINELS with REDIS_SENTINEL_NAME, not both')
  }
  try {
    if (raw !== undefined) return parseRedisTarget(raw)
    if (sentinels === undefined && name === undefined) return undefined
    if (sentinels === undefined || name === undefined) throw new ConfigError(sentinels === undefined ? 'REDIS_SENTINELS' : 'REDIS_SENTINEL_NAME', 'REDIS_SENTINELS and REDIS_SENTINEL_NAME must be set together')
    return sentinelTarget(sentinels, name)
  } catch (error) {
    if (error instanceof ConfigError) throw error
    throw new ConfigError(raw !== undefined ? 'REDIS_URL' : 'REDIS_SENTINELS', error instanceof Error ? error.message : String(error))
  }
}

/** Only beside DATABASE_URL: the embedded database has one role. */
function databaseOwnerUrl (env: Env): string | undefined {
  const owner = url(env, 'DATABASE_OWNER_URL', ['postgres:', 'postgresql:'])
  if (owner !== undefined && text(env, 'DATABASE_URL') === undefined) {
    throw new ConfigError('DATABASE_OWNER_URL', 'needs DATABASE_URL (the service\'s own role); the embedded database has one role')
  }
  return owner
}

export function loadConfig (env: Env = process.env): Config {
  const nodeEnv = oneOf<NodeEnv>(env, 'NODE_ENV', ['development', 'production', 'test'], 'development')
  const port = integer(env, 'PORT', 8080, 0, 65535)
  // One core is left to the event loop, which answers every request.
  const computeThreads = integer(env, 'COMPUTE_THREADS', Math.max(1, availableParallelism() - 1), 1, 256)
  const dataDir = resolve(text(env, 'DATA_DIR') ?? './data')
  const appUrl = url(env, 'APP_URL', ['http:', 'https:']) ?? `http://localhost:${port}`
  const databaseUrl = url(env, 'DATABASE_URL', ['postgres:', 'postgresql:'])
  if (databaseUrl === undefined && text(env, 'DATABASE_DIRECT_URL') !== undefined) {
    throw new ConfigError('DATABASE_DIRECT_URL', 'needs DATABASE_URL: it is the direct way to the same Postgres')
  }
  const redisTarget = redis(env)
  const config: Config = {
    nodeEnv,
    port,
    host: text(env, 'HOST') ?? '0.0.0.0',
    expose: oneOf<Expose>(env, 'EXPOSE', ['all', 'public', 'internal'], 'all'),
    dataDir,
    databaseUrl,
    databaseOwnerUrl: databaseOwnerUrl(env),
    databaseDirectUrl: url(env, 'DATABASE_DIRECT_URL', ['postgres:', 'postgresql:']) ?? databaseUrl,
    redisUrl: redisTarget === undefined ? undefined : text(env, 'REDIS_URL'),
    redis: redisTarget,
    databasePoolSize: integer(env, 'DATABASE_POOL_SIZE', 10, 1, 1_000),
    databaseIdleInTransactionTimeoutMs: integer(env, 'DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS', 5_000, 0, 86_400_000),
    appUrl,
    corsOrigin: url(env, 'CORS_ORIGIN', ['http:', 'https:']) ?? new URL(appUrl).origin,
    jwtSecret: jwtSecret(env, nodeEnv, dataDir),
    trustProxy: trustProxy(env),
    clientIpHeaders: clientIpHeaders(env),
    smtpUrl: url(env, 'SMTP_URL', ['smtp:', 'smtps:']),
    mailFrom: text(env, 'MAIL_FROM') ?? 'Canvas <no-reply@localhost>',
    rateLimitMaxRequests: integer(env, 'RATE_LIMIT_MAX_REQUESTS', 200, 1, 1_000_000),
    rateLimitWindowMs: integer(env, 'RATE_LIMIT_WINDOW_MS', 60_000, 100, 86_400_000),
    rateLimitKeyPrefix: keyPrefix(env, 'RATE_LIMIT_KEY_PREFIX', 'rl:'),
    sseHeartbeatMs: integer(env, 'SSE_HEARTBEAT_MS', 30_000, 10, 3_600_000),
    sseStallMs: 30_000,
    rtcAppId: text(env, 'RTC_APP_ID'),
    rtcAppCertificate: text(env, 'RTC_APP_CERTIFICATE'),
    oidc: oidc(env),
    logLevel: oneOf(env, 'LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], nodeEnv === 'test' ? 'silent' : 'info'),
    version: packageVersion(),
    http: httpTimeouts(env),
    tls: tlsFiles(env),
    shutdownDelayMs: integer(env, 'SHUTDOWN_DELAY_MS', 0, 0, 600_000),
    computeThreads,
    // A few tasks per thread absorb a burst; a longer queue would only make callers wait for
    // answers they may have given up on.
    computeQueue: integer(env, 'COMPUTE_QUEUE', 4 * computeThreads, 1, 100_000),
    // Below 128 MiB the parser's own code (PDF.js, mammoth) leaves a file too little to be read in.
    cvParseMemoryMb: integer(env, 'CV_PARSE_MEMORY_MB', 256, 128, 16_384),
    storage: storage(env, dataDir),
    uploadQuotaBytes: integer(env, 'UPLOAD_QUOTA_BYTES', GiB, 1, Number.MAX_SAFE_INTEGER),
    rpcPlainUnary: oneOf(env, 'RPC_PLAIN_UNARY', ['true', 'false'], 'true') === 'true',
    metricsPort: text(env, 'METRICS_PORT') === undefined ? undefined : integer(env, 'METRICS_PORT', 0, 0, 65535),
    // Not HOST: the public address would publish the metrics to every client (DECISIONS §17).
    metricsHost: text(env, 'METRICS_HOST') ?? '127.0.0.1',
    tracing: tracingConfigured(env)
  }
  if (config.metricsPort !== undefined && config.metricsPort !== 0 && config.metricsPort === config.port) {
    throw new ConfigError('METRICS_PORT', `must differ from PORT (${port}): metrics are never served on the public port`)
  }
  if ((config.rtcAppId === undefined) !== (config.rtcAppCertificate === undefined)) {
    throw new ConfigError(config.rtcAppId === undefined ? 'RTC_APP_ID' : 'RTC_APP_CERTIFICATE', 'RTC_APP_ID and RTC_APP_CERTIFICATE must be set together')
  }
  // Agora's ids are 32 hexadecimal digits; its token builder answers an empty token for anything else.
  for (const [name, value] of [['RTC_APP_ID', config.rtcAppId], ['RTC_APP_CERTIFICATE', config.rtcAppCertificate]] as const) {
    if (value !== undefined && !/^[0-9a-fA-F]{32}$/.test(value)) throw new ConfigError(name, 'must be 32 hexadecimal digits, as the Agora console shows it')
  }
  return Object.freeze(config)
}
