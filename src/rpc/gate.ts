// Every RPC call passes the one gate (src/http/admission.ts) before its body is read: the Bearer token
// names the caller, the method's path names its operation, and a refusal is answered in the call's
// own protocol, since no Connect handler has run yet: gRPC and gRPC-Web as a trailers-only reply
// (grpc-refusal.ts), the Connect protocol as its error JSON with the HTTP status of the code.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { bearerTokenOf, installAdmission } from '../http/admission.js'
import type { AppError } from '../core/errors.js'
import type { Core } from '../core/index.js'
import type { Limiter } from '../ratelimit/limiter.js'
import { connectErrorReply, toConnectError } from './errors.js'
import { isGrpcCall, sendGrpcRefusal } from './grpc-refusal.js'
import { noteRpcOutcome } from './outcome.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** An RPC route's procedure, `/<package>.<Service>/<Method>` (`/app.rooms.v1.RoomsService/GetRoom`),
     *  whether the call came under /rpc or at the standard path (standard-paths.ts). */
    procedure?: string
  }
}

/** `/rpc/app.rooms.v1.RoomsService/GetRoom` → `rooms.getRoom` (src/core/operations.ts); gRPC's own
 *  services the same way: `grpc.health.v1.Health/Check` → `health.check` (what `/health` is),
 *  `grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo` → `reflection.serverReflectionInfo`. */
export function operationOfPath (path: string): string | undefined {
  const match = /\/(?:app|grpc)\.([a-z]+)\.v\d+(?:(?:alpha|beta)\d*)?\.[A-Za-z]+\/([A-Z])([A-Za-z0-9]*)$/.exec(path)
  if (match === null) return undefined
  const [, domain = '', first = '', rest = ''] = match
  return `${domain}.${first.toLowerCase()}${rest}`
}

async function refuse (request: FastifyRequest, reply: FastifyReply, refusal: AppError): Promise<FastifyReply> {
  const error = toConnectError(refusal, () => {})
  noteRpcOutcome(request, error.code)
  if (isGrpcCall(request)) return await sendGrpcRefusal(request, reply, error)
  error.metadata.forEach((value, name) => { void reply.header(name, value) })
  const { status, body } = connectErrorReply(error)
  return await reply.code(status).type('application/json').send(Buffer.from(body))
}

/** `/rpc/app.rooms.v1.RoomsService/GetRoom` → `/app.rooms.v1.RoomsService/GetRoom`. */
export function procedureOfPath (path: string): string | undefined {
  return /\/[^/]+\/[^/]+$/.exec(path)?.[0]
}

export function installRpcGate (app: FastifyInstance, core: Core, limiter: Limiter | undefined): void {
  // The procedure is kept on the route, for what labels calls by service and method (metrics, traces).
  app.addHook('onRoute', (route) => {
    if (route.method === 'OPTIONS' || route.url.endsWith('*')) return
    route.config = { ...route.config, procedure: procedureOfPath(route.url) }
  })
  installAdmission(app, {
    transport: 'rpc',
    core,
    limiter,
    credentialOf: (request) => bearerTokenOf(request.headers.authorization),
    credentialRequired: 'A Bearer token is required.',
    refuse,
    operationOf: (route) => operationOfPath(route.url)
  })
}
