// Idempotency-Key on REST creates (issue 33, DECISIONS §15 and §17). A route opts in with one line in
// its config, `idempotent: true`; this scope then adds to it: as the request arrives (after the gate,
// before the body is read) the key is checked and the call opened — claimed at once when the body is
// still on its way, so a retry that arrives whole cannot overtake a slow first request; the handler
// runs within the call, so the create it calls runs once and a retry gets its outcome answered the
// same way (src/core/idempotency), with `Idempotent-Replayed: true`; once answered, a claim whose
// create never ran (a refused or cut-off request) is freed. A request without the header runs as
// before.
import { Http2ServerRequest } from 'node:http2'
import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler, RouteHandlerMethod } from 'fastify'
import type { Core } from '../core/index.js'
import type { KeyedCall } from '../core/idempotency/keyed-call.js'
import { IDEMPOTENCY_HEADER, type KeyOwner } from '../core/idempotency/idempotency.types.js'
import { AppError } from '../core/errors.js'
import { sendAppError } from './errors.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A create that an `Idempotency-Key` makes safe to retry. */
    idempotent?: true
  }
  interface FastifyRequest {
    /** The request carries an Idempotency-Key: its call (src/core/idempotency/keyed-call.ts). */
    idempotency?: KeyedCall
  }
}

/** Whose key it is: the signed-in user's, or the administrator's on an admin route. */
function ownerOf (request: FastifyRequest): KeyOwner | undefined {
  if (request.actor !== null) return { id: request.actor.userId, accountId: request.actor.userId }
  if (request.admin !== null) return { id: `admin:${request.admin.sub}`, accountId: null }
  return undefined
}

/** Whether the request's whole body has arrived already (or it has none). */
function bodyArrived (request: FastifyRequest): boolean {
  const raw = request.raw
  if (raw instanceof Http2ServerRequest) return raw.stream.endAfterHeaders || raw.stream.state.remoteClose === 1 // END_STREAM seen
  return raw.complete
}

export function installIdempotency (app: FastifyInstance, core: Core): void {
  /** Calls whose handler is running. */
  const handling = new WeakSet<KeyedCall>()
  const open: onRequestAsyncHookHandler = async function (request, reply) {
    try {
      const key = core.idempotency.parseKey(request.headers[IDEMPOTENCY_HEADER])
      // Every opted-in route needs a caller, so the gate has named one.
      const owner = ownerOf(request)
      if (key === undefined || owner === undefined) return
      // A file is streamed to storage as it arrives: its key is claimed before any of it is.
      const claimNow = request.headers['content-type']?.startsWith('multipart/') === true || !bodyArrived(request)
      request.idempotency = await core.idempotency.open(owner, key, `rest ${request.method} ${request.routeOptions.url ?? request.url}`, { claimNow })
    } catch (error) {
      if (error instanceof AppError) return await sendAppError(reply, error)
      throw error
    }
  }

  app.addHook('onRoute', (route) => {
    if (route.config?.idempotent !== true) return
    const handler = route.handler
    const keyedHandler: RouteHandlerMethod = async function (request, reply) {
      const call = request.idempotency
      if (call === undefined) return await handler.call(this, request, reply)
      handling.add(call)
      try {
        return await core.idempotency.within(call, async () => await handler.call(this, request, reply))
      } finally {
        handling.delete(call)
        await core.idempotency.settle(call)
      }
    }
    route.handler = keyedHandler
    route.onRequest = [...[route.onRequest ?? []].flat(), open]
    route.onSend = [...[route.onSend ?? []].flat(), async (request, reply, payload) => {
      if (request.idempotency?.replayed === true) void reply.header('idempotent-replayed', 'true')
      return payload
    }]
    // A request answered or abandoned before its handler ran (refused, its body cut off); one whose
    // handler runs is settled when the handler is done, never while its create may still run.
    const settle = async (request: FastifyRequest): Promise<void> => {
      const call = request.idempotency
      if (call !== undefined && !handling.has(call)) await core.idempotency.settle(call)
    }
    route.onResponse = [...[route.onResponse ?? []].flat(), settle]
    route.onRequestAbort = [...[route.onRequestAbort ?? []].flat(), settle]
  })
}
