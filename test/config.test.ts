// Configuration: parsed once, a bad value names its variable; the server refuses to start on one.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError, loadConfig } from '../src/config.js'
import { temporaryDir } from './helpers/temp-dirs.js'

const dataDir = (): string => temporaryDir('canvas-config-')

t.test('defaults', async (t) => {
  const dir = dataDir()
  const config = loadConfig({ DATA_DIR: dir })
  t.equal(config.port, 8080)
  t.equal(config.host, '0.0.0.0')
  t.equal(config.expose, 'all')
  t.equal(config.appUrl, 'http://localhost:8080')
  t.equal(config.corsOrigin, 'http://localhost:8080')
  t.equal(config.rateLimitMaxRequests, 200)
  t.equal(config.rateLimitWindowMs, 60000)
  t.equal(config.sseHeartbeatMs, 30000)
  t.equal(config.trustProxy, false)
  t.equal(config.databaseUrl, undefined)
  t.equal(config.http.bodyIdleMs, 30_000)
  t.equal(config.shutdownDelayMs, 0)
  t.ok(Object.isFrozen(config))
  t.equal(loadConfig({ DATA_DIR: dir }).jwtSecret, config.jwtSecret, 'the generated secret is kept in DATA_DIR')
  t.equal(readFileSync(join(dir, 'jwt-secret'), 'utf8'), config.jwtSecret)
})

t.test('DATABASE_DIRECT_URL defaults to DATABASE_URL; Redis as one server or a Sentinel set, in either form', async (t) => {
  const dir = dataDir()
  t.equal(loadConfig({ DATA_DIR: dir, DATABASE_URL: 'postgres://db/canvas' }).databaseDirectUrl, 'postgres://db/canvas')
  t.match(loadConfig({ DATA_DIR: dir, DATABASE_URL: 'postgres://pooler:6432/canvas', DATABASE_DIRECT_URL: 'postgres://db:5432/canvas' }), { databaseUrl: 'postgres://pooler:6432/canvas', databaseDirectUrl: 'postgres://db:5432/canvas' })
  t.same(loadConfig({ DATA_DIR: dir, REDIS_URL: 'redis://cache:6379/2' }).redis, { kind: 'server', url: 'redis://cache:6379/2' })
  t.same(loadConfig({ DATA_DIR: dir, REDIS_URL: 'redis+sentinel://:s%40cret@s1:26379,[::1]:26380,s3/mymaster/3' }).redis, {
    kind: 'sentinel',
    sentinels: [{ host: 's1', port: 26379 }, { host: '::1', port: 26380 }, { host: 's3', port: 26379 }],
    name: 'mymaster',
    db: 3,
    password: 's@cret'
  })
  t.same(loadConfig({ DATA_DIR: dir, REDIS_SENTINELS: 's1:26379, s2:26379', REDIS_SENTINEL_NAME: 'mymaster' }).redis, {
    kind: 'sentinel', sentinels: [{ host: 's1', port: 26379 }, { host: 's2', port: 26379 }], name: 'mymaster', db: 0
  })
})

t.test('a bad value names the variable', async (t) => {
  const cases: Array<[Record<string, string>, string]> = [
    [{ PORT: 'eighty' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ EXPOSE: 'everything' }, 'EXPOSE'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ REDIS_URL: 'not a url' }, 'REDIS_URL'],
    [{ REDIS_URL: 'http://redis:6379' }, 'REDIS_URL'],
    [{ REDIS_URL: 'redis+sentinel://a:26379,b:26379' }, 'REDIS_URL'],
    [{ REDIS_URL: 'redis+sentinel://a:99999/mymaster' }, 'REDIS_URL'],
    [{ REDIS_URL: 'redis+sentinel://a:26379/my master' }, 'REDIS_URL'],
    [{ REDIS_URL: 'redis://x', REDIS_SENTINELS: 'a:26379' }, 'REDIS_SENTINELS'],
    [{ REDIS_SENTINELS: 'a:26379,b:26379' }, 'REDIS_SENTINEL_NAME'],
    [{ REDIS_SENTINEL_NAME: 'mymaster' }, 'REDIS_SENTINELS'],
    [{ REDIS_SENTINELS: ',', REDIS_SENTINEL_NAME: 'mymaster' }, 'REDIS_SENTINELS'],
    [{ DATABASE_DIRECT_URL: 'postgres://db/canvas' }, 'DATABASE_DIRECT_URL'],
    [{ DATABASE_URL: 'postgres://pooler/canvas', DATABASE_DIRECT_URL: 'redis://db' }, 'DATABASE_DIRECT_URL'],
    [{ APP_URL: 'ftp://x' }, 'APP_URL'],
    [{ RATE_LIMIT_MAX_REQUESTS: '-1' }, 'RATE_LIMIT_MAX_REQUESTS'],
    [{ RATE_LIMIT_WINDOW_MS: '1.5' }, 'RATE_LIMIT_WINDOW_MS'],
    [{ SSE_HEARTBEAT_MS: 'soon' }, 'SSE_HEARTBEAT_MS'],
    [{ TRUST_PROXY: 'my proxy' }, 'TRUST_PROXY'],
    // Shaped like addresses, refused by the parser Fastify uses (they used to crash the first request).
    [{ TRUST_PROXY: '10.0.0.0/40' }, 'TRUST_PROXY'],
    [{ TRUST_PROXY: '999.1.1.1' }, 'TRUST_PROXY'],
    [{ TRUST_PROXY: '127.0.0.1,,10.0.0.1' }, 'TRUST_PROXY'],
    [{ HTTP_REQUEST_TIMEOUT_MS: '50' }, 'HTTP_REQUEST_TIMEOUT_MS'],
    [{ HTTP_BODY_IDLE_TIMEOUT_MS: '30s' }, 'HTTP_BODY_IDLE_TIMEOUT_MS'],
    [{ SHUTDOWN_DELAY_MS: '-5' }, 'SHUTDOWN_DELAY_MS'],
    [{ DATABASE_POOL_SIZE: '0' }, 'DATABASE_POOL_SIZE'],
    [{ DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: '5s' }, 'DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS'],
    [{ DATABASE_OWNER_URL: 'postgres://canvas_owner@127.0.0.1/canvas' }, 'DATABASE_OWNER_URL'],
    [{ DATABASE_OWNER_URL: 'mysql://owner@127.0.0.1/canvas' }, 'DATABASE_OWNER_URL'],
    [{ HTTP_HEADERS_TIMEOUT_MS: '20000', HTTP_REQUEST_TIMEOUT_MS: '10000' }, 'HTTP_HEADERS_TIMEOUT_MS'],
    [{ TLS_CERT_FILE: '/nonexistent/cert.pem', TLS_KEY_FILE: '/nonexistent/key.pem' }, 'TLS_CERT_FILE'],
    [{ TLS_KEY_FILE: '/etc/hostname' }, 'TLS_KEY_FILE'],
    [{ JWT_SECRET: 'short' }, 'JWT_SECRET'],
    [{ NODE_ENV: 'production' }, 'JWT_SECRET'],
    [{ RTC_APP_ID: 'id-only' }, 'RTC_APP_CERTIFICATE'],
    [{ SMTP_URL: 'http://mail' }, 'SMTP_URL'],
    [{ S3_ENDPOINT: 'http://127.0.0.1:9000' }, 'S3_ENDPOINT'],
    [{ S3_BUCKET: 'bad/name' }, 'S3_BUCKET'],
    [{ S3_BUCKET: 'b1', S3_ENDPOINT: 'ftp://x' }, 'S3_ENDPOINT'],
    [{ S3_BUCKET: 'b1', S3_REGION: 'Europe West' }, 'S3_REGION'],
    [{ S3_BUCKET: 'b1', S3_FORCE_PATH_STYLE: 'yes' }, 'S3_FORCE_PATH_STYLE'],
    [{ S3_BUCKET: 'b1', AWS_ACCESS_KEY_ID: 'id-only' }, 'AWS_SECRET_ACCESS_KEY'],
    [{ S3_BUCKET: 'b1', AWS_SESSION_TOKEN: 'token-only' }, 'AWS_SESSION_TOKEN'],
    [{ S3_BUCKET: 'b1', S3_KEY_PREFIX: 'up loads/' }, 'S3_KEY_PREFIX'],
    [{ UPLOAD_QUOTA_BYTES: '0' }, 'UPLOAD_QUOTA_BYTES'],
    [{ UPLOAD_QUOTA_BYTES: '1GiB' }, 'UPLOAD_QUOTA_BYTES'],
    [{ UPLOAD_DISK_RESERVE_BYTES: '-1' }, 'UPLOAD_DISK_RESERVE_BYTES'],
    [{ S3_BUCKET: 'b1', UPLOAD_DISK_RESERVE_BYTES: '0' }, 'UPLOAD_DISK_RESERVE_BYTES'],
    [{ OIDC_ISSUER: 'https://id.example.com' }, 'OIDC_AUDIENCE'],
    [{ OIDC_AUDIENCE: 'canvas' }, 'OIDC_ISSUER'],
    [{ OIDC_ISSUER: 'id.example.com', OIDC_AUDIENCE: 'canvas' }, 'OIDC_ISSUER'],
    [{ OIDC_ISSUER: 'ftp://id.example.com', OIDC_AUDIENCE: 'canvas' }, 'OIDC_ISSUER'],
    [{ OIDC_ISSUER: 'https://id.example.com', OIDC_AUDIENCE: 'canvas', OIDC_JWKS_URL: 'keys.json' }, 'OIDC_JWKS_URL'],
    [{ OIDC_JWKS_URL: 'https://id.example.com/keys' }, 'OIDC_JWKS_URL'],
    [{ OIDC_ROLES_CLAIM: 'roles' }, 'OIDC_ROLES_CLAIM'],
    [{ OIDC_ISSUER: 'https://id.example.com', OIDC_AUDIENCE: 'canvas', OIDC_ROLES_CLAIM: 'realm_access..roles' }, 'OIDC_ROLES_CLAIM']
  ]
  for (const [env, variable] of cases) {
    let thrown: unknown
    try {
      loadConfig({ DATA_DIR: dataDir(), ...env })
    } catch (error) {
      thrown = error
    }
    t.ok(thrown instanceof ConfigError && thrown.variable === variable, `${JSON.stringify(env)} → ${variable}`)
    t.match(String(thrown), variable)
  }
})

t.test('OIDC: off unless issuer and audience are set; the issuer kept as written; roles from `roles` by default', async (t) => {
  t.equal(loadConfig({ DATA_DIR: dataDir() }).oidc, undefined)
  t.same(loadConfig({ DATA_DIR: dataDir(), OIDC_ISSUER: 'https://tenant.auth0.com/', OIDC_AUDIENCE: 'canvas' }).oidc, {
    issuer: 'https://tenant.auth0.com/', audience: 'canvas', jwksUrl: undefined, rolesClaim: 'roles'
  })
  t.match(loadConfig({
    DATA_DIR: dataDir(),
    OIDC_ISSUER: 'https://kc.example.com/realms/ops',
    OIDC_AUDIENCE: 'canvas',
    OIDC_JWKS_URL: 'https://kc.example.com/realms/ops/protocol/openid-connect/certs',
    OIDC_ROLES_CLAIM: 'realm_access.roles'
  }).oidc, { jwksUrl: 'https://kc.example.com/realms/ops/protocol/openid-connect/certs', rolesClaim: 'realm_access.roles' })
})

t.test('uploads: DATA_DIR/uploads by default; an S3-compatible bucket when S3_BUCKET is set', async (t) => {
  const dir = dataDir()
  t.same(loadConfig({ DATA_DIR: dir }).storage, { kind: 'local', dir: join(dir, 'uploads'), reserveBytes: 1024 ** 3 })
  t.same(loadConfig({ DATA_DIR: dir, S3_BUCKET: 'canvas' }).storage, {
    kind: 's3', bucket: 'canvas', region: 'us-east-1', endpoint: undefined, forcePathStyle: false, credentials: undefined, keyPrefix: 'uploads/'
  }, 'AWS itself: virtual-hosted URLs, the SDK\'s own credential chain')
  t.same(loadConfig({
    DATA_DIR: dir, S3_BUCKET: 'canvas', S3_ENDPOINT: 'http://minio:9000/', S3_REGION: 'eu-west-1', S3_KEY_PREFIX: '', AWS_ACCESS_KEY_ID: 'id', AWS_SECRET_ACCESS_KEY: 'secret', AWS_SESSION_TOKEN: 'session'
  }).storage, {
    kind: 's3', bucket: 'canvas', region: 'eu-west-1', endpoint: 'http://minio:9000', forcePathStyle: true, credentials: { accessKeyId: 'id', secretAccessKey: 'secret', sessionToken: 'session' }, keyPrefix: ''
  }, 'a self-hosted endpoint: path-style unless told otherwise')
  t.match(loadConfig({ DATA_DIR: dir, S3_BUCKET: 'canvas', S3_ENDPOINT: 'https://s3.example.com', S3_FORCE_PATH_STYLE: 'false' }).storage, { kind: 's3', forcePathStyle: false })
  t.equal(loadConfig({ DATA_DIR: dir, AWS_ACCESS_KEY_ID: 'for another tool', AWS_SECRET_ACCESS_KEY: 'x' }).storage.kind, 'local', 'AWS keys alone do not switch storage')
})

t.test('UPLOAD_QUOTA_BYTES: 1 GiB per user by default; UPLOAD_DISK_RESERVE_BYTES: 1 GiB kept free on local disk, 0 turns it off', async (t) => {
  const dir = dataDir()
  t.equal(loadConfig({ DATA_DIR: dir }).uploadQuotaBytes, 1024 ** 3)
  t.equal(loadConfig({ DATA_DIR: dir, UPLOAD_QUOTA_BYTES: '3145728' }).uploadQuotaBytes, 3 * 1024 * 1024)
  t.match(loadConfig({ DATA_DIR: dir, UPLOAD_DISK_RESERVE_BYTES: '0' }).storage, { kind: 'local', reserveBytes: 0 })
})

t.test('CV_PARSE_MEMORY_MB: 256 by default, 128 to 16384', async (t) => {
  const dir = dataDir()
  t.equal(loadConfig({ DATA_DIR: dir }).cvParseMemoryMb, 256)
  t.equal(loadConfig({ DATA_DIR: dir, CV_PARSE_MEMORY_MB: '512' }).cvParseMemoryMb, 512)
  for (const value of ['127', '16385', 'lots']) t.throws(() => loadConfig({ DATA_DIR: dir, CV_PARSE_MEMORY_MB: value }), /^CV_PARSE_MEMORY_MB: /, value)
})

t.test('METRICS_PORT: off unless set, never the public port; tracing on only with the OTLP endpoint', async (t) => {
  const dir = dataDir()
  t.equal(loadConfig({ DATA_DIR: dir }).metricsPort, undefined)
  t.equal(loadConfig({ DATA_DIR: dir, METRICS_PORT: '9464' }).metricsPort, 9464)
  t.throws(() => loadConfig({ DATA_DIR: dir, PORT: '9464', METRICS_PORT: '9464' }), new ConfigError('METRICS_PORT', 'must differ from PORT (9464): metrics are never served on the public port'))
  t.throws(() => loadConfig({ DATA_DIR: dir, METRICS_PORT: '70000' }), /METRICS_PORT: must be between 0 and 65535/)
  t.equal(loadConfig({ DATA_DIR: dir }).tracing, false)
  t.equal(loadConfig({ DATA_DIR: dir, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).tracing, true)
  t.equal(loadConfig({ DATA_DIR: dir, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }).tracing, false)
})

t.test('TRUST_PROXY accepts true and IP/CIDR lists', async (t) => {
  t.equal(loadConfig({ DATA_DIR: dataDir(), TRUST_PROXY: 'true' }).trustProxy, true)
  t.equal(loadConfig({ DATA_DIR: dataDir(), TRUST_PROXY: '10.0.0.0/8, 127.0.0.1' }).trustProxy, '10.0.0.0/8, 127.0.0.1')
})

t.test('the server refuses to start on a bad value, naming it', async (t) => {
  const result = spawnSync(process.execPath, ['--import=tsx', 'src/server.ts'], {
    env: { ...process.env, PORT: 'abc', DATA_DIR: dataDir() },
    encoding: 'utf8',
    timeout: 60_000
  })
  t.equal(result.status, 1)
  t.match(result.stderr, /Invalid configuration: PORT/)
})
