// Idempotency-Key on REST creates (issue 33, DECISIONS §15). A route opts in with one line in its
// config, `idempotent: true`; this scope then adds two route hooks to it: before the handler, the key
// is checked and claimed (src/core/idempotency: a retry gets the first answer replayed, with
// `Idempotent-Replayed: true`); on send, the answer is stored (a 5xx frees the key instead, as nothing
// was created). A request without the header runs as before.
import type { FastifyInstance, FastifyReply, FastifyRequest, onSendHookHandler, preHandlerAsyncHookHandler } from 'fastify'
import type { Core } from '../core/index.js'
import { requestFingerprint } from '../core/idempotency/idempotency.js'
import { IDEMPOTENCY_HEADER, type FirstRun } from '../core/idempotency/idempotency.types.js'
import { sendAppError } from './errors.js'
import { AppError } from '../core/errors.js'
import { logThrottled } from '../infra/throttled-log.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A create that an `Idempotency-Key` makes safe to retry. */
    idempotent?: true
  }
  interface FastifyRequest {
    /** This request is the first with its key: its answer is stored on send. */
    idempotencyRun?: FirstRun
  }
}

/** Headers of the first answer that a replay sends again. */
const REPLAYED_HEADERS = ['etag', 'location']

/**
 * The request as a retry must repeat it: method, route, path parameters and JSON body. A multipart
 * body (uploads) is streamed to storage, never held, so its length and media type stand for it.
 */
function fingerprintOf (request: FastifyRequest): string {
  const scope = `rest ${request.method} ${request.routeOptions.url ?? request.url}`
  const multipart = request.headers['content-type']?.startsWith('multipart/') === true
  const body = multipart ? { multipart: request.headers['content-length'] ?? 'chunked' } : request.body
  return requestFingerprint(scope, { params: request.params, body })
}

async function replay (reply: FastifyReply, answer: { status: number, headers: Record<string, string>, body: string }): Promise<FastifyReply> {
  void reply.code(answer.status).headers(answer.headers).header('idempotent-replayed', 'true')
  if (answer.body === '') return await reply.send()
  return await reply.type('application/json; charset=utf-8').send(answer.body)
}

export function installIdempotency (app: FastifyInstance, core: Core): void {
  const claim: preHandlerAsyncHookHandler = async function (request, reply) {
    try {
      const key = core.idempotency.parseKey(request.headers[IDEMPOTENCY_HEADER])
      // Every opted-in route needs the session, so the gate has named the caller.
      if (key === undefined || request.actor === null) return
      const claimed = await core.idempotency.claim(request.actor.userId, key, fingerprintOf(request))
      if (claimed.kind === 'replay') return await replay(reply, claimed.answer)
      request.idempotencyRun = claimed
    } catch (error) {
      if (error instanceof AppError) return await sendAppError(reply, error)
      throw error
    }
  }

  const store: onSendHookHandler = async function (request, reply, payload) {
    const run = request.idempotencyRun
    if (run === undefined) return payload
    request.idempotencyRun = undefined
    if (reply.statusCode >= 500 || (payload !== null && payload !== undefined && typeof payload !== 'string')) {
      await run.release().catch((error: unknown) => { logThrottled(request.server.log, 'warn', 'idempotency: release failed', { err: error, reqId: request.id }) })
      return payload
    }
    const headers: Record<string, string> = {}
    for (const name of REPLAYED_HEADERS) {
      const value = reply.getHeader(name)
      if (typeof value === 'string') headers[name] = value
    }
    try {
      await run.finish({ status: reply.statusCode, headers, body: payload ?? '' })
    } catch (error) {
      // The create happened; the key stays claimed until it expires (a retry is told 409), rather
      // than freed for a second create.
      logThrottled(request.server.log, 'warn', 'idempotency: storing the answer failed', { err: error, reqId: request.id })
    }
    return payload
  }

  app.addHook('onRoute', (route) => {
    if (route.config?.idempotent !== true) return
    route.preHandler = [...[route.preHandler ?? []].flat(), claim]
    route.onSend = [...[route.onSend ?? []].flat(), store]
  })
}
