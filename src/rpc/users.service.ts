// app.users.v1.UsersService: message ↔ core mapping only. A User message carries `email` only for
// the caller themself (empty otherwise, as proto3 leaves an unset string).
import type { ServiceImpl } from '@connectrpc/connect'
import type { Core } from '../core/index.js'
import { UsersService } from '../gen/app/users/v1/users_pb.js'
import { actorOf } from './context.js'

export function usersService (core: Core): ServiceImpl<typeof UsersService> {
  const { users } = core
  return {
    async getUser (req, ctx) {
      return { user: await users.get(actorOf(ctx), { userId: req.userId }) }
    },
    async updateProfile (req, ctx) {
      return { user: await users.updateProfile(actorOf(ctx), { displayName: req.displayName, avatarUrl: req.avatarUrl }) }
    },
    async searchUsers (req, ctx) {
      const { items, pagination } = await users.search(actorOf(ctx), { q: req.query, page: req.page, limit: req.limit })
      return { users: items, pagination }
    },
    async getDisplayInfo (req, ctx) {
      return { users: await users.displayInfo(actorOf(ctx), { userIds: req.userIds }) }
    }
  }
}
