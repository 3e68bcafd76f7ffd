// /api/users (DECISIONS §9): a user's display info, one's own profile, search by name or address.
// Parse → one core call → `{ data }`.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Core } from '../core/index.js'
import { SearchUsersQuery, UpdateProfileInput, UserIdParams } from '../core/users/users.types.js'
import { actorOf } from './identity.js'

export function userRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()
    const { users } = core

    r.get('/', { schema: { querystring: SearchUsersQuery }, config: { operation: 'users.searchUsers' } }, async (request) => {
      const { items, pagination } = await users.search(actorOf(request), request.query)
      return { data: items, pagination }
    })

    r.patch('/me', { schema: { body: UpdateProfileInput }, config: { operation: 'users.updateProfile' } }, async (request) => {
      return { data: await users.updateProfile(actorOf(request), request.body) }
    })

    r.get('/:userId', { schema: { params: UserIdParams }, config: { operation: 'users.getUser' } }, async (request) => {
      return { data: await users.get(actorOf(request), request.params) }
    })
  }
}
