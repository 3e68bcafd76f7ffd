// Who is calling a REST route: a session cookie, or a Bearer token for non-browser clients such as
// the desktop app's event stream. src/rest/request-gate.ts admits the request with it.
import type { FastifyRequest } from 'fastify'
import { bearerTokenOf } from '../http/admission.js'
import { AppError } from '../core/errors.js'
import { SESSION_COOKIE } from './route-config.js'

export function credentialOf (request: FastifyRequest): string | undefined {
  const cookie = request.cookies[SESSION_COOKIE]
  if (cookie !== undefined && cookie !== '') return cookie
  return bearerTokenOf(request.headers.authorization)
}

/** The caller of a Required operation (the gate has already refused anonymous calls). */
export function actorOf (request: FastifyRequest): NonNullable<FastifyRequest['actor']> {
  if (request.actor === null) throw new AppError('unauthenticated', 'Sign in to continue.')
  return request.actor
}
