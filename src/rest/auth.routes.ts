// /api/auth: magic-link sign-in with the session cookie, the current user, logout, account deletion.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Config } from '../config.js'
import { AppError } from '../core/errors.js'
import type { Core } from '../core/index.js'
import { RequestLoginInput, TokenInput } from '../core/auth/auth.types.js'
import { actorOf } from './identity.js'
import { Type } from 'typebox'
import { DeletionRequest, LoginRequest, User, noContent, ok } from './responses.js'
import { SESSION_COOKIE } from './route-config.js'

/** The quality a media type gets in an Accept header (0 when not listed by name). */
function qualityOf (accept: string, type: string): number {
  for (const range of accept.split(',')) {
    const [name = '', ...parameters] = range.split(';').map((part) => part.trim().toLowerCase())
    if (name !== type) continue
    const q = parameters.find((p) => p.startsWith('q='))
    return q === undefined ? 1 : Number(q.slice(2)) || 0
  }
  return 0
}

/** A browser navigating: it asks for HTML by name, at least as much as for JSON. */
function prefersHtml (accept: string | undefined): boolean {
  if (accept === undefined) return false
  const html = qualityOf(accept, 'text/html')
  return html > 0 && html >= qualityOf(accept, 'application/json')
}

export function authRoutes (core: Core, config: Config) {
  const cookieOptions = {
    path: '/',
    httpOnly: true,
    secure: config.nodeEnv === 'production',
    sameSite: 'lax' as const
  }

  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()

    r.post('/request-login', { schema: { summary: 'Mail a sign-in link', tags: ['auth'], response: ok(LoginRequest), body: RequestLoginInput }, config: { operation: 'auth.requestLogin' } }, async (request) => {
      const { expiresAt } = await core.auth.requestLogin(request.body, { poll: false })
      return { data: { sent: true, expiresAt } }
    })

    r.get('/authorize', {
      schema: { summary: 'Open a mailed sign-in link (sets the session cookie, redirects to the app)', tags: ['auth'], response: { 302: Type.Null({ description: 'To APP_URL, with the session cookie set (a refused link in a browser: to APP_URL/?signin=invalid)' }) }, querystring: TokenInput },
      config: { operation: 'auth.openSignInLink' },
      // A browser opening a used, expired or forged link goes back to the app, which says so
      // (DECISIONS §14), rather than to a JSON page; API clients keep the 400 envelope.
      errorHandler: async (error, request, reply) => {
        const refusedLink = error instanceof AppError && (error.kind === 'invalid_token' || error.kind === 'validation')
        if (refusedLink && prefersHtml(request.headers.accept)) return await reply.redirect(`${config.appUrl}/?signin=invalid`, 302)
        throw error
      }
    }, async (request, reply) => {
      const { sessionToken, maxAgeSeconds } = await core.auth.signInWithLink(request.query)
      void reply.setCookie(SESSION_COOKIE, sessionToken, { ...cookieOptions, maxAge: maxAgeSeconds })
      return await reply.redirect(config.appUrl, 302)
    })

    r.get('/me', { schema: { summary: 'The signed-in user', tags: ['auth'], response: ok(User) }, config: { operation: 'auth.getMe' } }, async (request) => {
      return { data: await core.auth.me(actorOf(request)) }
    })

    r.post('/logout', { schema: { summary: 'Sign out (ends this session)', tags: ['auth'], response: noContent }, config: { operation: 'auth.logout' } }, async (request, reply) => {
      await core.auth.logout(actorOf(request))
      void reply.clearCookie(SESSION_COOKIE, cookieOptions)
      return await reply.code(204).send()
    })

    r.post('/request-deletion', { schema: { summary: 'Mail a link that deletes the account', tags: ['auth'], response: ok(DeletionRequest) }, config: { operation: 'auth.requestDeletion' } }, async (request) => {
      return { data: await core.auth.requestDeletion(actorOf(request)) }
    })

    r.post('/confirm-deletion', { schema: { summary: 'Delete the account with the mailed token', tags: ['auth'], response: noContent, body: TokenInput }, config: { operation: 'auth.confirmDeletion' } }, async (request, reply) => {
      await core.auth.confirmDeletion(request.body)
      void reply.clearCookie(SESSION_COOKIE, cookieOptions)
      return await reply.code(204).send()
    })
  }
}
