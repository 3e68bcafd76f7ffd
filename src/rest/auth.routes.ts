// /api/auth: magic-link sign-in with the session cookie, the current user, logout, account deletion.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Config } from '../config.js'
import type { Core } from '../core/index.js'
import { RequestLoginInput, TokenInput } from '../core/auth/auth.types.js'
import { actorOf } from './identity.js'
import { SESSION_COOKIE } from './route-config.js'

export function authRoutes (core: Core, config: Config) {
  const cookieOptions = {
    path: '/',
    httpOnly: true,
    secure: config.nodeEnv === 'production',
    sameSite: 'lax' as const
  }

  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()

    r.post('/request-login', { schema: { body: RequestLoginInput }, config: { operation: 'auth.requestLogin' } }, async (request) => {
      const { expiresAt } = await core.auth.requestLogin(request.body, { poll: false })
      return { data: { sent: true, expiresAt } }
    })

    r.get('/authorize', { schema: { querystring: TokenInput }, config: { operation: 'auth.openSignInLink' } }, async (request, reply) => {
      const { sessionToken, maxAgeSeconds } = await core.auth.signInWithLink(request.query)
      void reply.setCookie(SESSION_COOKIE, sessionToken, { ...cookieOptions, maxAge: maxAgeSeconds })
      return await reply.redirect(config.appUrl, 302)
    })

    r.get('/me', { config: { operation: 'auth.getMe' } }, async (request) => {
      return { data: await core.auth.me(actorOf(request)) }
    })

    r.post('/logout', { config: { operation: 'auth.logout' } }, async (request, reply) => {
      await core.auth.logout(actorOf(request))
      void reply.clearCookie(SESSION_COOKIE, cookieOptions)
      return await reply.code(204).send()
    })

    r.post('/request-deletion', { config: { operation: 'auth.requestDeletion' } }, async (request) => {
      return { data: await core.auth.requestDeletion(actorOf(request)) }
    })

    r.post('/confirm-deletion', { schema: { body: TokenInput }, config: { operation: 'auth.confirmDeletion' } }, async (request, reply) => {
      await core.auth.confirmDeletion(request.body)
      void reply.clearCookie(SESSION_COOKIE, cookieOptions)
      return await reply.code(204).send()
    })
  }
}
