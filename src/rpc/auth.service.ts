// app.auth.v1.AuthService: message ↔ core mapping only.
import type { ServiceImpl } from '@connectrpc/connect'
import type { Core } from '../core/index.js'
import { AuthService, LoginStatus } from '../gen/app/auth/v1/auth_pb.js'
import { actorOf } from './context.js'

export function authService (core: Core): Partial<ServiceImpl<typeof AuthService>> {
  const { auth } = core
  return {
    async requestLogin (req) {
      const { pollToken, expiresAt } = await auth.requestLogin({ email: req.email }, { poll: true })
      return { pollToken, expiresAt }
    },
    async pollLoginStatus (req) {
      const result = await auth.pollLoginStatus({ pollToken: req.pollToken })
      if (result.status === 'PENDING') return { status: LoginStatus.PENDING }
      return { status: LoginStatus.COMPLETED, accessToken: result.accessToken, refreshToken: result.refreshToken, expiresAt: result.expiresAt }
    },
    async getAuthorizeInfo (req) {
      return await auth.getAuthorizeInfo({ token: req.token })
    },
    async authorizeLogin (req) {
      return await auth.authorizeLogin({ token: req.token })
    },
    async getMe (_req, ctx) {
      return { user: await auth.me(actorOf(ctx)) }
    },
    async refreshToken (req) {
      return await auth.refreshToken({ refreshToken: req.refreshToken })
    },
    async logout (_req, ctx) {
      await auth.logout(actorOf(ctx))
      return {}
    },
    async requestDeletion (_req, ctx) {
      return await auth.requestDeletion(actorOf(ctx))
    },
    async confirmDeletion (req) {
      await auth.confirmDeletion({ token: req.token })
      return {}
    },
    async getConfig () {
      return auth.getConfig()
    },
    async ping (req) {
      return auth.ping({ message: req.message })
    }
  }
}
