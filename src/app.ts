// Builds the whole service for a configuration: infrastructure first, then the REST API and/or the
// RPC gateway as EXPOSE says. server.ts runs it; every test builds the same app.
import cookie from '@fastify/cookie'
import Fastify, { LogController, type FastifyInstance, type FastifyRequest, type RouteOptions } from 'fastify'
import type { Server } from 'node:http'
import type { Config } from './config.js'
import { createCompute } from './compute/compute.js'
import { createCore, type Core } from './core/index.js'
import type { CoreDeps } from './core/deps.js'
import { startLive } from './live/live.js'
import type { EventLogBus } from './live/event-log-bus.js'
import type { StreamHub } from './live/stream-hub.js'
import type { HealthProbe } from './core/health.js'
import { eventsHealth } from './live/delivery-stall.js'
import { openDatabase, type DatabaseHandle } from './db/database.js'
import { systemClock, type Clock } from './infra/clock.js'
import { createMailer } from './infra/mail.js'
import { connectRedis } from './infra/redis.js'
import { liveConnectionsFor } from './live/live-connections.js'
import { createAudience } from './core/audience.js'
import { createPresenceDirectory } from './core/presence/presence-directory.js'
import { createSlotStore } from './infra/stream-slots.js'
import { createStorage } from './infra/storage.js'
import { startUploadSweeps } from './core/uploads/upload-sweep.js'
import { startDeletionResumes } from './core/users/deletion-resume.js'
import { startRetention } from './core/retention/retention.js'
import { healthRoute, watchForFailures } from './http/health.routes.js'
import { createHealthMonitor, type HealthMonitor } from './http/health-monitor.js'
import { databaseHealth } from './http/database-health.js'
import { frameworkErrorAnswer, MAX_PATH_PARAM_LENGTH } from './http/framework-errors.js'
import { installNotFound } from './http/not-found.js'
import { clientErrorAnswer } from './http/client-errors.js'
import { createListener, type RequestHandler } from './http/listener.js'
import { installClientIp, proxyTrust } from './http/client-ip.js'
import { genReqId, installRequestId } from './http/request-id.js'
import { installAccessLog, type AccessLineFields } from './http/access-log.js'
import type { EdgeRefusals } from './http/refusals.js'
import { createRequestEnds } from './http/request-end.js'
import { installRestErrorHandler, restRefusalWriter } from './rest/errors.js'
import { restApi } from './rest/index.js'
import { rpcRefusalWriter } from './rpc/errors.js'
import { registerOpenApi } from './rest/openapi.js'
import { RPC_PREFIX, rpcGateway } from './rpc/index.js'
import { standardPathRewrite } from './rpc/standard-paths.js'
import { redactUrl } from './infra/redact.js'
import { createJwksCache, DEFAULT_JWKS_TIMING, type JwksTiming } from './infra/jwks-cache.js'
import { createLimiter, type LimiterOptions } from './ratelimit/limiter.js'
import { DEFAULT_LIMITER_TIMING, type LimiterTiming } from './ratelimit/limiter-counts.js'
import { createMetrics, installRequestMetrics, listenForMetrics, type MetricsListener } from './http/metrics.js'
import { installRequestTracing, traceFields } from './http/request-tracing.js'
import { flushTracing, tracingStarted } from './infra/tracing.js'
import { observeStorage } from './infra/storage-observed.js'
import { logThrottled } from './infra/throttled-log.js'

declare module 'fastify' {
  interface FastifyInstance {
    core: Core
    deps: CoreDeps
    /** The live stream of this instance: the event-log bus and its open streams. */
    live: { bus: EventLogBus, streams: StreamHub }
    /** The instance is leaving (SIGTERM): /health answers 503 `draining` from now on, while requests
     *  are still served until close(), which drains too. */
    drain (): void
    /** The port GET /metrics listens on once the app is ready; undefined without METRICS_PORT. */
    metricsPort (): number | undefined
  }
}

/** On shutdown, connections still open after this long are cut, so the process exits within 10 s. */
const DRAIN_MS = 8_000

export interface BuildOptions {
  /** Time source; tests pass one they can move. */
  clock?: Clock
  /** An already open database to share (tests running two instances on one PGlite); not closed by the app. */
  database?: DatabaseHandle
  /** Never from the environment: false builds the app without the rate limiter (benchmarks);
   *  `maxOverride` raises tier limits so a load run is not answered by 429s; `timing` shortens the
   *  limiter's log period and degraded period (tests). */
  rateLimit?: false | { maxOverride?: LimiterOptions['maxOverride'], timing?: Partial<LimiterTiming> }
  /** Sees every route as it is registered (tests walk the app's own route table with it). */
  onRoute?: (route: RouteOptions) => void
  /** Where log lines go instead of standard output (tests read them; server.ts passes pino's
   *  asynchronous destination, which it flushes on exit). */
  logStream?: { write: (line: string) => void }
  /** Counts /health probe rounds (tests: at most one a second, whatever the load). */
  onHealthRound?: () => void
  /** More fields for every access line (the trace id, when tracing is on: src/http/access-log.ts). */
  accessLineFields?: AccessLineFields
  /** Tests only: shorter JWKS timeouts and refetch cooldowns than the production defaults. */
  jwksTiming?: Partial<JwksTiming>
  /** Tests only: fewer grpc.health.v1 Watch calls open at once than the production bound (src/rpc/health.service.ts). */
  maxHealthWatches?: number
}

export async function buildApp (config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  // The edge answers its own refusals in the envelope of the transport a path belongs to: each
  // transport hands it its writer (src/http/refusals.ts).
  const refusals: EdgeRefusals = { rest: restRefusalWriter, rpc: { prefix: RPC_PREFIX, write: rpcRefusalWriter } }
  // Where every request's end is read, whatever ended it, for the access line and the metrics
  // (src/http/request-end.ts); the edge's own refusals report to it too.
  const ends = createRequestEnds()
  const app = Fastify({
    logger: {
      level: config.logLevel,
      // A request that is logged whole is logged with the client's address by the service's one rule
      // (src/http/client-ip.ts), and without the tokens a URL may carry (src/infra/redact.ts).
      serializers: { req: (request: FastifyRequest) => ({ method: request.method, url: redactUrl(request.url), host: request.host, remoteAddress: request.clientIp, remotePort: request.socket.remotePort }) },
      ...(options.logStream === undefined ? {} : { stream: options.logStream })
    },
    // One access line per request instead of Fastify's two (src/http/access-log.ts).
    logController: new LogController({ disableRequestLogging: true }),
    // X-Request-Id (DECISIONS §15): a client's id kept when it is fit, else a new one, as request.id.
    requestIdHeader: false,
    genReqId,
    trustProxy: proxyTrust(config.trustProxy),
    routerOptions: { maxParamLength: MAX_PATH_PARAM_LENGTH },
    frameworkErrors: frameworkErrorAnswer(refusals, ends),
    // gRPC calls at `/<package>.<Service>/<Method>` are the gateway's too (src/rpc/standard-paths.ts).
    ...(config.expose === 'internal' ? {} : { rewriteUrl: standardPathRewrite(RPC_PREFIX) }),
    // HTTP/1.1 and HTTP/2 on one port, with the timeouts and the draining close of src/http/listener.ts.
    serverFactory: (handler) => createListener(handler as RequestHandler, { timeouts: config.http, tls: config.tls, drainMs: DRAIN_MS, refuse: refusals.rest }) as Server,
    // Only names the scheme of the addresses Fastify logs and returns: the listener above serves TLS.
    ...(config.tls === undefined ? {} : { https: {} }),
    // The listener drains connections itself on close (Fastify's way cuts requests already on the wire).
    forceCloseConnections: false,
    // A request that arrives on an open connection while the server closes is answered, not refused
    // with Fastify's own 503 body; its answer tells the client to close the connection.
    return503OnClosing: false,
    clientErrorHandler: clientErrorAnswer(refusals.rest, ends)
  })

  // First, so the request span encloses every hook and handler (nothing when tracing is off).
  await installRequestTracing(app, ends)
  if (config.tracing && !tracingStarted()) {
    app.log.warn('OTEL_EXPORTER_OTLP_ENDPOINT is set but tracing did not start: run the process with --import ./dist/src/tracing-preload.js (npm start and the Docker image do)')
  }
  app.addHook('onClose', async () => { await flushTracing() })
  if (options.onRoute !== undefined) app.addHook('onRoute', options.onRoute)
  installClientIp(app, config)
  installRequestId(app)
  ends.install(app)
  installAccessLog(app.log, ends, { extraFields: options.accessLineFields ?? traceFields() })
  // Only with METRICS_PORT: otherwise nothing is counted.
  const metrics = config.metricsPort === undefined ? undefined : createMetrics()
  if (metrics !== undefined) installRequestMetrics(ends, metrics)

  const database = options.database ?? await openDatabase(metrics === undefined ? config : { ...config, onQueryError: () => { metrics.queryError() } })
  const redis = config.redis === undefined ? undefined : await connectRedis(config.redis)
  const plainStorage = await createStorage(config.storage, app.log)
  const storage = metrics === undefined && !tracingStarted()
    ? plainStorage
    : observeStorage(plainStorage, metrics === undefined ? undefined : { stored: (bytes) => { metrics.uploadBytes(bytes) } })
  const mailer = await createMailer({ smtpUrl: config.smtpUrl, from: config.mailFrom, dataDir: config.dataDir, log: app.log })
  const clock = options.clock ?? systemClock
  // Events travel through the database's LISTEN/NOTIFY and a durable log (src/live).
  const live = await startLive({
    db: database.db,
    connections: liveConnectionsFor(database, config, app.log),
    slots: createSlotStore({
      redis,
      prefix: config.rateLimitKeyPrefix,
      now: () => clock.now().getTime(),
      onFallback: (error) => { logThrottled(app.log, 'warn', 'stream caps: Redis unavailable, counting per instance', { err: error }) }
    }),
    clock,
    log: app.log,
    heartbeatMs: config.sseHeartbeatMs,
    stallMs: config.sseStallMs
  })
  // CPU-heavy work runs on worker threads (src/compute); closed after the requests awaiting it.
  const compute = createCompute(config, app.log, metrics === undefined ? undefined : (name, seconds, outcome) => { metrics.computeTask(name, seconds, outcome) })
  app.addHook('onClose', async () => { await compute.close() })
  // The admin provider's keys, fetched on first use and kept through its outages (src/infra/jwks-cache.ts).
  const adminKeys = config.oidc === undefined ? undefined : createJwksCache(config.oidc, app.log, { ...DEFAULT_JWKS_TIMING, ...options.jwksTiming })
  const deps: CoreDeps = { config, db: database.db, events: live.bus, mailer, clock, log: app.log, sessionSignals: live.sessionSignals, cursorFeed: live.cursorFeed, presenceBoard: live.presenceBoard, compute: compute.compute, storage, adminKeys }
  const core = createCore(deps)
  // The core's audience rule (and who presence may show), on the live read connections: a busy write
  // pool never delays delivery.
  const streams = live.streams(createAudience({ db: live.readDb }), createPresenceDirectory(live.readDb))
  app.decorate('core', core)
  app.decorate('deps', deps)
  app.decorate('live', { bus: live.bus, streams })
  // Open streams never finish on their own: end them first, or close() would wait on them.
  app.addHook('preClose', async () => { streams.closeAll() })

  // While closing, answers in flight tell keep-alive clients to hang up, so close() does not wait
  // on connections that turn idle after it began.
  let closing = false
  let draining = false
  app.decorate('drain', () => { draining = true })
  app.addHook('preClose', async () => { closing = draining = true })
  // A callback hook, not an async one: it runs on every response, and a promise each is not free.
  app.addHook('onSend', (request, reply, payload, done) => {
    // HTTP/2 has no Connection header (its session gets a GOAWAY instead).
    if (closing && request.raw.httpVersionMajor === 1) void reply.header('connection', 'close')
    done(null, payload)
  })

  // Stored bytes no upload refers to are swept by one instance twice a day (core/uploads/upload-sweep.ts).
  const sweeps = startUploadSweeps(deps)
  // Account deletions a restart or an outage stopped part-way are finished (core/users/deletion-resume.ts).
  const deletions = startDeletionResumes(deps)
  // Expired rows of every growing table are pruned in short batches, one instance at a time (core/retention/).
  const retention = startRetention(deps)
  app.addHook('onClose', async () => {
    await sweeps.stop()
    await deletions.stop()
    await retention.stop()
    await live.close()
    mailer.close()
    await storage.close()
    if (redis !== undefined) redis.disconnect()
    if (options.database === undefined) await database.close()
  })

  // Made below, after the probes that read the limiter.
  const seen: { health?: HealthMonitor } = {}
  const limiter = options.rateLimit === false
    ? undefined
    : await createLimiter(app, {
      config,
      redis,
      clock: deps.clock,
      maxOverride: options.rateLimit?.maxOverride,
      timing: { ...DEFAULT_LIMITER_TIMING, ...options.rateLimit?.timing },
      // The health report is kept in memory: a count this instance answered alone is a failure seen.
      onLocalAnswer: () => { seen.health?.failureSeen() },
      ...(metrics === undefined ? {} : { onDecision: (tier, allowed) => { metrics.rateLimitDecision(tier, allowed) } })
    })

  let metricsListener: MetricsListener | undefined
  app.decorate('metricsPort', () => metricsListener?.port)
  if (metrics !== undefined && config.metricsPort !== undefined) {
    const metricsPort = config.metricsPort
    live.bus.follow((event) => { metrics.eventDelivered(clock.now().getTime() - Date.parse(event.timestamp)) })
    metrics.readFrom({
      ...(limiter === undefined ? {} : { limiterCounts: limiter.counts }),
      streamsOpen: () => streams.size,
      heldBackMs: () => live.bus.lagMs(),
      ...(database.pool === undefined ? {} : { pool: database.pool }),
      computeLoad: compute.load,
      // Made below, with its probes; `draining` as /health answers it.
      health: async () => {
        const report = await seen.health!.report()
        return draining ? { ...report, status: 'draining' } : report
      }
    })
    // Its own listener, never the public port; opened when the app is ready, closed with it.
    app.addHook('onReady', async () => { metricsListener = await listenForMetrics(metrics, metricsPort, config.metricsHost) })
    app.addHook('onClose', async () => { await metricsListener?.close() })
  }

  // Counts the limiter answered alone (Redis late or failing), at the cache's last check: more since
  // then raise the cache's alarm, so /health says degraded at once rather than within a second.
  const countedAlone = (): number => Object.values(limiter?.counts.snapshot() ?? {}).reduce((sum, bySource) => sum + (bySource.late ?? 0) + (bySource.unavailable ?? 0), 0)
  let countedAloneAtCheck = 0
  const probes: Record<string, HealthProbe> = {
    database: databaseHealth(database),
    cache: {
      // The limiter falls back to per-instance memory when Redis is down: degraded, not down.
      essential: false,
      check: async () => {
        countedAloneAtCheck = countedAlone()
        if (limiter !== undefined) return await limiter.health()
        if (redis === undefined) return 'healthy'
        await redis.ping()
        return 'healthy'
      },
      alarm: () => countedAlone() > countedAloneAtCheck
    }
  }
  const servesRest = config.expose !== 'public'
  if (servesRest) probes.storage = { essential: true, check: async () => { await storage.probe(); return 'healthy' } }
  // Live events held back behind an open transaction somewhere on the cluster: the API works, late events.
  if (servesRest) probes.events = { essential: false, check: async () => eventsHealth(live.bus.lagMs()), alarm: () => eventsHealth(live.bus.lagMs()) !== 'healthy' }

  await app.register(cookie)
  // The REST envelope is the app's default (health, unknown paths, the REST API); /rpc has its own.
  installRestErrorHandler(app)
  installNotFound(app, refusals.rest)
  // Response schemas document the API (src/rest/responses.ts); answers are serialised as they are,
  // so a field a schema does not list is never dropped (src/rest/README.md).
  app.setSerializerCompiler(() => (data) => JSON.stringify(data))
  // /openapi.json and /docs, before the routes they describe, and only where REST is served.
  if (servesRest) await registerOpenApi(app)
  const startedAt = Date.now()
  const health = seen.health = createHealthMonitor({
    probes,
    clock: deps.clock,
    ...(servesRest ? { uptime: () => Math.round((Date.now() - startedAt) / 1000) } : {}),
    ...(options.onHealthRound === undefined ? {} : { onRound: options.onHealthRound })
  })
  watchForFailures(app, health)
  await app.register(healthRoute(health, () => draining))
  if (servesRest) await app.register(restApi, { prefix: '/api', core, config, limiter, live: { streams, caps: live.caps } })
  if (config.expose !== 'internal') await app.register(rpcGateway, { prefix: RPC_PREFIX, core, config, limiter, health: { monitor: health, draining: () => draining, maxWatches: options.maxHealthWatches } })
  return app
}
