// How each RPC call ended, in the gRPC / Connect code model, for the access line, the metrics and
// the request span (src/http/request-end.ts): DECISIONS §17 counts RPC outcomes by their code, not by
// the HTTP status that carried them (gRPC and gRPC-Web carry every code in a 200).
//
// The gateway notes the code where it answers: the gate's and Fastify's refusals (gate.ts,
// errors.ts), the plain unary route (connect-unary.ts), and connect-fastify's calls, whose replies
// Connect writes itself — for those each universal handler is wrapped here and the code read from
// the reply as the client reads it: a Connect reply's status and error JSON, gRPC's `grpc-status`
// (headers of a trailers-only reply, else trailers), gRPC-Web's trailer frame at the end of the body.
// Service and method come from the procedure, whatever the path prefix.
import { gunzipSync, brotliDecompressSync } from 'node:zlib'
import { Code, createContextKey } from '@connectrpc/connect'
import type { UniversalHandler, UniversalServerRequest, UniversalServerResponse } from '@connectrpc/connect/protocol'
import { codeFromHttpStatus, codeFromString, codeToHttpStatus, codeToString } from '@connectrpc/connect/protocol-connect'
import { trailerFlag, trailerParse } from '@connectrpc/connect/protocol-grpc-web'
import type { FastifyRequest } from 'fastify'
import type { RpcOutcome } from '../http/request-end.js'

/** The Fastify request of a call, in its context values, so the reply's code can be noted on it. */
export const callRequestKey = createContextKey<FastifyRequest | undefined>(undefined, { description: 'the Fastify request of the call' })

/** `ok` (undefined) or an error code, as the access line, the metrics and the span read it; classed
 *  by the status a Connect reply of the code has, unless the gateway answers it with another. */
export function rpcOutcomeOf (code: Code | undefined, httpStatus = code === undefined ? 200 : codeToHttpStatus(code)): RpcOutcome {
  if (code === undefined) return { code: 'ok', grpcStatus: 0, httpStatus }
  return { code: codeToString(code), grpcStatus: code, httpStatus }
}

/** Notes how `request`'s call ended: `ok` (undefined) or an error code; `httpStatus` where the
 *  gateway's Connect reply keeps Fastify's status (an unknown procedure is 404, not Connect's 501). */
export function noteRpcOutcome (request: FastifyRequest, code: Code | undefined, httpStatus?: number): void {
  request.rpcOutcome = rpcOutcomeOf(code, httpStatus)
}

/** The largest Connect error body read for its code (error JSON is small; past this, the status decides). */
const MAX_ERROR_JSON = 64 * 1024
const COMPRESSED_FLAG = 0b1

/** Wraps each handler in place (the router's own list, as request-bodies.ts does) so that the code
 *  of each reply it writes is noted on the call's request. */
export function observeOutcomes (handlers: UniversalHandler[]): void {
  for (const [index, handler] of handlers.entries()) handlers[index] = observing(handler)
}

function observing (handler: UniversalHandler): UniversalHandler {
  const observed = async (call: UniversalServerRequest): Promise<UniversalServerResponse> => {
    const request = call.contextValues?.get(callRequestKey)
    const response = await handler(call)
    if (request === undefined) return response
    const { body } = response
    if (body === undefined || body instanceof Uint8Array) {
      request.rpcOutcome = rpcOutcomeOf(codeOfReply(response, body === undefined ? [] : [body]))
      return response
    }
    return { ...response, body: noting(body, response, request) }
  }
  const { protocolNames, service, method, requestPath, allowedMethods, supportedContentType } = handler
  return Object.assign(observed, { protocolNames, service, method, requestPath, allowedMethods, supportedContentType })
}

/** Passes the reply's body through; once it is all written, notes its code. A body the client
 *  abandoned halfway notes nothing (the request ends as `canceled`). */
async function * noting (body: AsyncIterable<Uint8Array>, response: UniversalServerResponse, request: FastifyRequest): AsyncGenerator<Uint8Array> {
  // Only what the code is read from is kept: the last chunk (gRPC-Web's trailer frame: Connect
  // yields one chunk per frame) and, for a Connect error, the error JSON.
  const kept: Uint8Array[] = []
  let keptBytes = 0
  const keepAll = response.status !== 200
  for await (const chunk of body) {
    if (keepAll) {
      keptBytes += chunk.byteLength
      if (keptBytes <= MAX_ERROR_JSON) kept.push(chunk)
    } else {
      kept[0] = chunk
    }
    yield chunk
  }
  request.rpcOutcome = rpcOutcomeOf(codeOfReply(response, kept))
}

/** The code a client reads from a whole reply (undefined: ok). */
function codeOfReply (response: UniversalServerResponse, body: Uint8Array[]): Code | undefined {
  const contentType = response.header?.get('content-type') ?? ''
  let status: number | undefined
  if (/^application\/grpc-web/i.test(contentType)) {
    status = grpcStatusOf(response.header) ?? grpcWebTrailerStatusOf(body.at(-1), response.header?.get('grpc-encoding'))
  } else if (/^application\/grpc/i.test(contentType)) {
    status = grpcStatusOf(response.header) ?? grpcStatusOf(response.trailer)
  } else {
    return response.status === 200 ? undefined : connectErrorCode(body) ?? codeFromHttpStatus(response.status)
  }
  if (status === 0) return undefined
  // A gRPC reply with no status at all reads as `unknown` to its client.
  return status !== undefined && status in Code ? status : Code.Unknown
}

/** The `grpc-status` number in headers or trailers; undefined when absent. */
function grpcStatusOf (headers: Headers | undefined): number | undefined {
  const value = headers?.get('grpc-status')
  if (value === undefined || value === null) return undefined
  const status = Number(value)
  return Number.isInteger(status) ? status : Code.Unknown
}

/** gRPC-Web's trailers travel as the last frame of the body (flag 0x80). */
function grpcWebTrailerStatusOf (frame: Uint8Array | undefined, encoding: string | null | undefined): number | undefined {
  if (frame === undefined || frame.byteLength < 5 || (frame[0]! & trailerFlag) !== trailerFlag) return undefined
  let data = frame.subarray(5)
  if ((frame[0]! & COMPRESSED_FLAG) !== 0) {
    if (encoding === 'gzip') data = gunzipSync(data)
    else if (encoding === 'br') data = brotliDecompressSync(data)
    else return undefined
  }
  return grpcStatusOf(trailerParse(data))
}

/** A Connect error JSON's `code`. */
function connectErrorCode (body: Uint8Array[]): Code | undefined {
  try {
    const json = JSON.parse(Buffer.concat(body).toString('utf8')) as { code?: unknown }
    return typeof json.code === 'string' ? codeFromString(json.code) : undefined
  } catch {
    return undefined
  }
}
