// Who is calling a REST route: a session cookie, or a Bearer token for non-browser clients such as
// the desktop app's event stream. src/rest/request-gate.ts decides what a route does with it.
import type { FastifyRequest } from 'fastify'
import { AppError } from '../core/errors.js'
import type { Core } from '../core/index.js'
import { SESSION_COOKIE } from './route-config.js'

function credentialOf (request: FastifyRequest): string | undefined {
  const cookie = request.cookies[SESSION_COOKIE]
  if (cookie !== undefined && cookie !== '') return cookie
  const header = request.headers.authorization
  if (header !== undefined && /^Bearer\s+/i.test(header)) return header.replace(/^Bearer\s+/i, '').trim()
  return undefined
}

/**
 * Sets `request.actor` when the request presents a valid credential. A presented credential that is
 * refused (expired, revoked, forged) is returned, not thrown: the caller counts the request first.
 */
export async function resolveIdentity (core: Core, request: FastifyRequest): Promise<AppError | null> {
  const credential = credentialOf(request)
  if (credential === undefined) return null
  try {
    request.actor = await core.auth.authenticate(credential)
    return null
  } catch (error) {
    if (!(error instanceof AppError)) throw error
    return error
  }
}

/** The caller of a route declared `access: 'required'` (the gate has already refused anonymous calls). */
export function actorOf (request: FastifyRequest): NonNullable<FastifyRequest['actor']> {
  if (request.actor === null) throw new AppError('unauthenticated', 'Sign in to continue.')
  return request.actor
}
