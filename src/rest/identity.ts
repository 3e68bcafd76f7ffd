// Resolves the caller once per request (session cookie, or a Bearer token for non-browser clients
// such as the desktop app's event stream) and enforces each route's declared access.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../core/errors.js'
import type { Core } from '../core/index.js'
import { sendAppError } from './errors.js'
import { SESSION_COOKIE } from './route-config.js'

function credentialOf (request: FastifyRequest): string | undefined {
  const cookie = request.cookies[SESSION_COOKIE]
  if (cookie !== undefined && cookie !== '') return cookie
  const header = request.headers.authorization
  if (header !== undefined && /^Bearer\s+/i.test(header)) return header.replace(/^Bearer\s+/i, '').trim()
  return undefined
}

export function installIdentity (app: FastifyInstance, core: Core): void {
  app.decorateRequest('actor', null)
  app.decorateRequest('identityError', null)
  app.addHook('onRequest', async (request) => {
    const access = request.routeOptions.config.access ?? 'required'
    if (access === 'public') return
    const credential = credentialOf(request)
    if (credential === undefined) return
    try {
      request.actor = await core.auth.authenticate(credential)
    } catch (error) {
      if (!(error instanceof AppError)) throw error
      request.identityError = error
    }
  })
}

/** Runs after the rate limiter so that 401s carry rate-limit headers too. */
export function installAccessCheck (app: FastifyInstance): void {
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const access = request.routeOptions.config.access ?? 'required'
    if (access === 'public') return
    if (request.identityError !== null) return await sendAppError(reply, request.identityError)
    if (access === 'required' && request.actor === null) {
      return await sendAppError(reply, new AppError('unauthenticated', 'Sign in to continue.'))
    }
  })
}

/** The caller of a route declared `access: 'required'` (the access hook has already refused anonymous calls). */
export function actorOf (request: FastifyRequest): NonNullable<FastifyRequest['actor']> {
  if (request.actor === null) throw new AppError('unauthenticated', 'Sign in to continue.')
  return request.actor
}
