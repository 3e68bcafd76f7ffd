// Connect-protocol unary calls in their plain form — POST, `application/json` or `application/proto`,
// body not compressed, no Connect-Timeout-Ms: what Connect clients send for nearly every call — are
// answered by one Fastify route per method. Every other request to the same path (gRPC, gRPC-Web,
// GET, a compressed body, a deadline, a content type Connect refuses) goes on to connect-fastify: a
// route constraint decides, before the body is read. RPC_PLAIN_UNARY=false leaves every call to
// connect-fastify (README.md: when to turn it off).
//
// Why: connect-fastify's way through a call (its Node bridge, then Connect's protocol handler) costs
// several times the CPU of a Fastify route — per call it builds a URL, async iterables for the body,
// and three AbortControllers, two of them aborted with a DOMException whose stack trace is captured —
// and the spec asks RPC for most of the REST throughput (bench/rpc-paths.ts measures both paths).
// Only the transport glue is ours: the content types, the serialization, the compression
// negotiation, the interceptors and the call of the implementation, the error JSON and the HTTP
// status of each code are Connect's own functions, with the same options as the connect-fastify
// routes. Some of them (invokeUnaryImplementation, the serialization lookup) are exported for
// adapters but marked internal, outside semver: the lockfile pins Connect, and
// test/rpc-unary-equivalence.test.ts, which sends every unary method down both ways and compares the
// answers, is what tells whether an upgrade changed them.
//
// The HandlerContext is built here by hand, as Connect's createHandlerContext would, with one
// difference: its signal (call-signals.ts) aborts when the client goes away and when the shutdown
// grace ends, as Connect's does, but not after a call that ended normally.
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http'
import type { DescMethod, DescService } from '@bufbuild/protobuf'
import {
  createServiceImplSpec,
  type ConnectRouter, type ConnectRouterOptions, type ContextValues, type HandlerContext, type MethodImplSpec, type ServiceImpl, type ServiceImplSpec
} from '@connectrpc/connect'
import { compressionNegotiate, createMethodSerializationLookup, invokeUnaryImplementation, validateUniversalHandlerOptions } from '@connectrpc/connect/protocol'
import { contentTypeUnaryJson, contentTypeUnaryProto, parseContentType, trailerMux } from '@connectrpc/connect/protocol-connect'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { callSignals, type CallSignals } from './call-signals.js'
import { enumCheckOf } from './closed-enums.js'
import { connectErrorOf, connectErrorReply } from './errors.js'
import { decodeBinaryMessage, readLimitError } from './request-bodies.js'
import { noteRpcOutcome } from './outcome.js'

/** A service and its implementation, for the Connect router and for the routes here. */
export interface ServiceRoute {
  spec: ServiceImplSpec
  /** The largest request body its methods read, where it is not the gateway's (PassportService). */
  readMaxBytes?: number
  register (router: ConnectRouter): void
}

export function serviceRoute<S extends DescService> (service: S, impl: Partial<ServiceImpl<S>>, readMaxBytes?: number): ServiceRoute {
  return {
    spec: createServiceImplSpec(service, impl),
    ...(readMaxBytes === undefined ? {} : { readMaxBytes }),
    register: (router) => { router.service(service, impl, readMaxBytes === undefined ? undefined : { readMaxBytes }) }
  }
}

export interface ConnectUnaryOptions {
  services: readonly ServiceRoute[]
  /** The options of the connect-fastify plugin: the same interceptors, JSON options, limits, compressions. */
  connect: ConnectRouterOptions
  contextValues: (request: FastifyRequest) => ContextValues
}

const EMPTY = new Uint8Array(0)

/** The route constraint: `plain` for a request this module answers, `other` for connect-fastify's. */
const CONSTRAINT = 'connectUnary'
const PLAIN = 'plain'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set on the routes of this module (tests tell which way a call went by it). */
    connectUnary?: true
  }
}

/** Whether a request is a Connect unary call in its plain form (see the top of this file). */
export function isPlainConnectUnary (method: string | undefined, headers: IncomingHttpHeaders): boolean {
  if (method !== 'POST') return false
  const type = parseContentType(headers['content-type'] ?? null)
  if (type === undefined || type.stream) return false
  const encoding = headers['content-encoding']
  return (encoding === undefined || encoding === 'identity') && headers['connect-timeout-ms'] === undefined
}

type ConstraintStrategy = Parameters<FastifyInstance['addConstraintStrategy']>[0]
type ConstraintStore = ReturnType<ConstraintStrategy['storage']>

function addConstraint (app: FastifyInstance): void {
  if (app.hasConstraintStrategy(CONSTRAINT)) return
  app.addConstraintStrategy({
    name: CONSTRAINT,
    // Routes without the constraint (connect-fastify's, every other route) still match any request.
    mustMatchWhenDerived: false,
    storage (): ConstraintStore {
      const handlers = new Map<unknown, Parameters<ConstraintStore['set']>[1]>()
      return { get: (value) => handlers.get(value) ?? null, set: (value, handler) => { handlers.set(value, handler) } }
    },
    deriveConstraint: (req: IncomingMessage) => isPlainConnectUnary(req.method, req.headers) ? PLAIN : 'other'
  })
}

/** Registers the plain unary routes of every unary method; call it in the scope that holds connect-fastify. */
export async function connectUnaryRoutes (app: FastifyInstance, options: ConnectUnaryOptions): Promise<void> {
  addConstraint(app)
  const opt = validateUniversalHandlerOptions(options.connect)
  const signals = callSignals(opt.shutdownSignal)
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers()
    scope.addContentTypeParser([contentTypeUnaryJson, contentTypeUnaryProto], { parseAs: 'buffer', bodyLimit: opt.readMaxBytes }, (_request, body, done) => { done(null, body) })

    for (const { spec: { service, methods }, readMaxBytes = opt.readMaxBytes } of options.services) {
      for (const method of service.methods) {
        const spec = methods[method.localName]
        if (spec?.kind !== 'unary') continue
        const answer = unaryCall(spec, method, { ...opt, readMaxBytes }, signals, options.contextValues)
        scope.post(`/${service.typeName}/${method.name}`, {
          constraints: { [CONSTRAINT]: PLAIN },
          config: { connectUnary: true },
          bodyLimit: readMaxBytes,
          // Fastify refuses a body over the limit before the handler: answered as Connect does.
          errorHandler: async (error: FastifyError, request, reply) => {
            if (error.statusCode === 413) return await answer.error(request, reply, readLimitError(declaredLength(request), readMaxBytes))
            throw error
          }
        }, answer.call)
      }
    }
  })
}

type HandlerOptions = ReturnType<typeof validateUniversalHandlerOptions>

function unaryCall (spec: MethodImplSpec & { kind: 'unary' }, method: DescMethod, opt: HandlerOptions, signals: CallSignals, contextValues: ConnectUnaryOptions['contextValues']) {
  const serialization = createMethodSerializationLookup(method, opt.binaryOptions, opt.jsonOptions, opt)
  const enums = enumCheckOf(method.input)

  function contextOf (request: FastifyRequest, binary: boolean, signal: AbortSignal): HandlerContext {
    return {
      service: method.parent,
      method,
      protocolName: 'connect',
      requestMethod: 'POST',
      // A plain property: Connect copies the context with Object.assign, which is slow past a getter.
      url: `${request.protocol}://${request.host}${request.url}`,
      signal,
      timeoutMs: () => undefined,
      requestHeader: requestHeadersOf(request.headers),
      responseHeader: new Headers({ 'content-type': binary ? contentTypeUnaryProto : contentTypeUnaryJson }),
      responseTrailer: new Headers(),
      values: contextValues(request)
    }
  }

  async function send (request: FastifyRequest, reply: FastifyReply, status: number, header: Headers, trailer: Headers, message: Uint8Array): Promise<FastifyReply> {
    let body = message
    const compression = compressionNegotiate(opt.acceptCompression, null, request.headers['accept-encoding'] ?? null, 'Accept-Encoding').response
    if (compression !== null && body.byteLength >= opt.compressMinBytes) {
      body = await compression.compress(body)
      header.set('content-encoding', compression.name)
    }
    // Unary trailers travel as `trailer-` headers; no implementation here sets any.
    const headers = isEmpty(trailer) ? header : trailerMux(header, trailer)
    headers.forEach((value, name) => { void reply.header(name, value) })
    return await reply.code(status).send(Buffer.from(body.buffer, body.byteOffset, body.byteLength))
  }

  /** A failed call as Connect answers it: the error's status, its metadata as headers, the error JSON. */
  async function error (request: FastifyRequest, reply: FastifyReply, reason: unknown, header: Headers = new Headers(), trailer: Headers = new Headers()): Promise<FastifyReply> {
    const failure = connectErrorOf(reason)
    noteRpcOutcome(request, failure.code)
    header.set('content-type', contentTypeUnaryJson)
    failure.metadata.forEach((value, name) => { header.set(name, value) })
    const { status, body } = connectErrorReply(failure, opt.jsonOptions)
    return await send(request, reply, status, header, trailer, body)
  }

  async function call (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const binary = parseContentType(request.headers['content-type'] ?? null)?.binary === true
    const signal = signals.open(reply.raw)
    const context = contextOf(request, binary, signal.signal)
    let output: Uint8Array
    try {
      // No body at all (no Content-Length, not chunked) is an empty one, as for Connect.
      const bytes = (request.body as Buffer | undefined) ?? EMPTY
      // Connect reports a binary body that does not decode as `internal`; it is the caller's mistake.
      if (!binary) enums?.json(bytes)
      const input = binary ? decodeBinaryMessage(bytes, method.input) : serialization.getI(false).parse(bytes)
      if (binary) enums?.message(input)
      output = serialization.getO(binary).serialize(await invokeUnaryImplementation(spec, context, input, opt.interceptors))
    } catch (reason) {
      signal.end()
      return await error(request, reply, reason, context.responseHeader, context.responseTrailer)
    }
    signal.end()
    noteRpcOutcome(request, undefined)
    return await send(request, reply, 200, context.responseHeader, context.responseTrailer, output)
  }

  return { call, error }
}

/** The body length the client declared (none for a chunked body). */
function declaredLength (request: FastifyRequest): number | undefined {
  const length = Number(request.headers['content-length'])
  return Number.isSafeInteger(length) ? length : undefined
}

/** Node's parsed request headers as connect-node hands them to Connect: HTTP/2 pseudo-headers left out. */
function requestHeadersOf (node: IncomingHttpHeaders): Headers {
  const headers = new Headers()
  for (const [name, value] of Object.entries(node)) {
    if (name.startsWith(':') || value === undefined) continue
    if (typeof value === 'string') headers.append(name, value)
    else for (const one of value) headers.append(name, one)
  }
  return headers
}

function isEmpty (headers: Headers): boolean {
  return headers.keys().next().done === true
}
