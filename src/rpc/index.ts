// The Connect RPC gateway under /rpc: Bearer auth, JSON and binary Protobuf, CORS for every origin
// without credentials. One file per service maps messages to core calls.
import { setMaxListeners } from 'node:events'
import { fastifyConnectPlugin } from '@connectrpc/connect-fastify'
import { Code, ConnectError, createContextValues, type ConnectRouter, type ConnectRouterOptions, type ContextValues } from '@connectrpc/connect'
import { compressionBrotli, compressionGzip } from '@connectrpc/connect-node'
import cors from '@fastify/cors'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Config } from '../config.js'
import type { Core } from '../core/index.js'
import { CanvasService } from '../gen/app/canvas/v1/canvas_pb.js'
import { OfficesService } from '../gen/app/offices/v1/offices_pb.js'
import { PassportService } from '../gen/app/passport/v1/passport_pb.js'
import { RoomsService } from '../gen/app/rooms/v1/rooms_pb.js'
import { RtcService } from '../gen/app/rtc/v1/rtc_pb.js'
import { ShelvesService } from '../gen/app/shelves/v1/shelves_pb.js'
import { SparksService } from '../gen/app/sparks/v1/sparks_pb.js'
import { UsersService } from '../gen/app/users/v1/users_pb.js'
import { authService } from './auth.service.js'
import { canvasService } from './canvas.service.js'
import { officesService } from './offices.service.js'
import { passportService } from './passport.service.js'
import { shelvesService } from './shelves.service.js'
import { roomsService } from './rooms.service.js'
import { sparksService } from './sparks.service.js'
import { usersService } from './users.service.js'
import { rtcService } from './rtc.service.js'
import { AuthService } from '../gen/app/auth/v1/auth_pb.js'
import { Health } from '../gen/grpc/health/v1/health_pb.js'
import { healthService, type HealthSource } from './health.service.js'
import { REFLECTION_SERVICES, reflectionOf, reflectionServices } from './reflection.service.js'
import { checkRequestBodies } from './request-bodies.js'
import { connectUnaryRoutes, serviceRoute, type ServiceRoute } from './connect-unary.js'
import { errorInterceptor } from './interceptors.js'
import { installRpcGate } from './gate.js'
import type { Limiter } from '../ratelimit/limiter.js'
import { actorKey } from './context.js'
import { clampDeadlines } from './deadlines.js'
import { installRpcErrorReplies } from './errors.js'
import { encodeProtobufStringsWithBuffer } from './text-encoding.js'
import { callRequestKey, observeOutcomes } from './outcome.js'

/** Where the gateway is served: every procedure is `/rpc/<package>.<Service>/<Method>`. */
export const RPC_PREFIX = '/rpc'

/** The largest request body the gateway reads (as Fastify's body limit on the REST API). */
export const RPC_READ_MAX_BYTES = 1024 * 1024

/** PassportService's: ImportCV carries a CV of up to 5 MiB, which JSON writes in base64 (4/3 as
 *  long, 6.67 MiB). The other methods of the service bound every field by its schema, as everywhere.
 *  The file's own limit (5 MiB) is the core's, on both transports. */
export const PASSPORT_READ_MAX_BYTES = 7 * 1024 * 1024

/** How long calls in flight may run on once the server begins to close. */
const SHUTDOWN_GRACE_MS = 5_000

/** Every service the gateway declares (DECISIONS §4), in one list for the gateway and its tests. */
export const RPC_SERVICES = [AuthService, RoomsService, SparksService, CanvasService, OfficesService, PassportService, RtcService, UsersService, ShelvesService] as const

/** gRPC's own services beside them (DECISIONS §17): health checking and server reflection (v1, v1alpha). */
export const GRPC_SERVICES = [Health, ...REFLECTION_SERVICES] as const

export interface RpcOptions {
  core: Core
  config: Config
  /** Absent only when the app is built without a limiter (benchmark baseline). */
  limiter?: Limiter | undefined
  /** What grpc.health.v1.Health reports: the /health report, and whether the instance is leaving;
   *  and how many Watch calls may be open at once (tests lower it). */
  health: HealthSource & { maxWatches?: number | undefined }
}

export async function rpcGateway (app: FastifyInstance, { core, config, limiter, health }: RpcOptions): Promise<void> {
  await app.register(cors, {
    origin: '*',
    credentials: false,
    methods: ['GET', 'POST', 'OPTIONS'],
    allowedHeaders: ['Content-Type', 'Authorization', 'Connect-Protocol-Version', 'Connect-Timeout-Ms', 'Connect-Accept-Encoding', 'Connect-Content-Encoding', 'X-User-Agent', 'X-Grpc-Web', 'Grpc-Timeout', 'X-Request-Id', 'Idempotency-Key'],
    exposedHeaders: ['Grpc-Status', 'Grpc-Message', 'Grpc-Status-Details-Bin', 'Retry-After', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'X-Request-Id', 'Idempotent-Replayed'],
    maxAge: 7200
  })

  installRpcErrorReplies(app)
  installRpcGate(app, core, limiter)
  clampDeadlines(app)
  encodeProtobufStringsWithBuffer()

  const services: ServiceRoute[] = [
    serviceRoute(AuthService, authService(core)),
    serviceRoute(RoomsService, roomsService(core)),
    serviceRoute(SparksService, sparksService(core)),
    serviceRoute(CanvasService, canvasService(core)),
    serviceRoute(OfficesService, officesService(core)),
    serviceRoute(PassportService, passportService(core), PASSPORT_READ_MAX_BYTES),
    serviceRoute(RtcService, rtcService(core)),
    serviceRoute(UsersService, usersService(core)),
    serviceRoute(ShelvesService, shelvesService(core))
  ]
  const served = [...RPC_SERVICES, ...GRPC_SERVICES]
  const healthChecks = healthService({ ...health, services: served.map((s) => s.typeName) })
  // Every Watch ends as the server begins to close (close() would otherwise wait on them).
  app.addHook('preClose', async () => { healthChecks.close() })
  const reflection = reflectionServices(reflectionOf(served))
  const [reflectionV1, reflectionV1alpha] = REFLECTION_SERVICES
  services.push(
    serviceRoute(Health, healthChecks.impl),
    serviceRoute(reflectionV1, reflection.v1),
    serviceRoute(reflectionV1alpha, reflection.v1alpha)
  )

  await serveRpcServices(app, services, {
    plainUnary: config.rpcPlainUnary,
    logError: (error) => { app.log.error({ err: error }, 'unhandled RPC error') },
    // The caller the gate resolved from the Bearer token.
    contextValues: (request) => createContextValues().set(actorKey, request.actor)
  })
}

export interface ServeOptions {
  /** Plain Connect unary calls take the routes of connect-unary.ts (config RPC_PLAIN_UNARY). */
  plainUnary: boolean
  /** Where an error no table knows is reported before it is masked as `internal`. */
  logError: (error: unknown) => void
  contextValues: (request: FastifyRequest) => ContextValues
  /** How long calls in flight may run on once the server begins to close; tests shorten it. */
  shutdownGraceMs?: number
}

/** Serves the services in `app` (the gateway's scope): each unary method's plain route, unless
 *  switched off, and connect-fastify's routes for every call the plain routes leave (README.md). */
export async function serveRpcServices (app: FastifyInstance, services: readonly ServiceRoute[], options: ServeOptions): Promise<void> {
  const routes = (router: ConnectRouter): void => {
    for (const service of services) service.register(router)
    // Every method the router serves has its request bodies checked, each against its service's limit.
    const limits = new Map(services.map((s) => [s.spec.service.typeName, s.readMaxBytes ?? RPC_READ_MAX_BYTES]))
    checkRequestBodies(router.handlers, (service) => limits.get(service) ?? RPC_READ_MAX_BYTES)
    // Each reply's gRPC / Connect code is noted on its request (the access line, metrics, span).
    observeOutcomes(router.handlers)
  }

  // Calls in flight when the server closes get a grace period to finish, then are aborted. This is
  // connect-fastify's `shutdownTimeoutMs` done here, so that the one signal every call in flight
  // listens on is ours: its listener limit is lifted (past 10 concurrent calls Node would log a
  // "possible memory leak" warning, though each call removes its listener when it ends).
  const shutdown = new AbortController()
  setMaxListeners(0, shutdown.signal)
  app.addHook('preClose', async () => {
    setTimeout(() => { shutdown.abort(new ConnectError('the server is shutting down', Code.Unavailable)) }, options.shutdownGraceMs ?? SHUTDOWN_GRACE_MS).unref()
  })

  const connect: ConnectRouterOptions = {
    interceptors: [errorInterceptor(options.logError)],
    // SPEC: false booleans and zero numbers are still present in JSON replies.
    jsonOptions: { alwaysEmitImplicit: true },
    readMaxBytes: RPC_READ_MAX_BYTES,
    // connect-fastify's default; the plain unary routes negotiate reply compression from the same list.
    acceptCompression: [compressionGzip, compressionBrotli],
    shutdownSignal: shutdown.signal
  }
  const contextValues = (request: FastifyRequest): ContextValues => options.contextValues(request).set(callRequestKey, request)

  // Plain Connect unary calls take the routes of connect-unary.ts; the rest goes to connect-fastify.
  if (options.plainUnary) await connectUnaryRoutes(app, { services, connect, contextValues })
  await app.register(fastifyConnectPlugin, { ...connect, routes, contextValues })
}
