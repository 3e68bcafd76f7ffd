// /api/users (DECISIONS §9): a user's display info (one, or many at once: `display-info?ids=a,b`),
// one's own profile and avatar, search by name or address.
// Parse → one core call → `{ data }`.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Core } from '../core/index.js'
import { DisplayInfoQuery, SearchUsersQuery, UpdateProfileInput, UserIdParams } from '../core/users/users.types.js'
import { actorOf } from './identity.js'
import { Type } from 'typebox'
import { PublicUser, User, list, ok } from './responses.js'
import { acceptMultipart, receiveUpload, uploadForm } from './upload-form.js'

export function userRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()
    const { users } = core

    r.get('/', { schema: { summary: 'Search users by name', tags: ['users'], response: list(PublicUser), querystring: SearchUsersQuery }, config: { operation: 'users.searchUsers' } }, async (request) => {
      const { items, pagination } = await users.search(actorOf(request), request.query)
      return { data: items, pagination }
    })

    r.patch('/me', { schema: { summary: 'Update your profile', tags: ['users'], response: ok(User), body: UpdateProfileInput }, config: { operation: 'users.updateProfile' } }, async (request) => {
      return { data: await users.updateProfile(actorOf(request), request.body) }
    })

    r.get('/display-info', { schema: { summary: 'Display names and avatars of several users', tags: ['users'], response: ok(Type.Array(PublicUser)), querystring: DisplayInfoQuery }, config: { operation: 'users.getDisplayInfo' } }, async (request) => {
      return { data: await users.displayInfoOfList(actorOf(request), request.query) }
    })

    r.get('/:userId', { schema: { summary: 'One user', tags: ['users'], response: ok(Type.Union([User, PublicUser], { description: 'Your own profile with your e-mail address; anyone else without it' })), params: UserIdParams }, config: { operation: 'users.getUser' } }, async (request) => {
      return { data: await users.get(actorOf(request), request.params) }
    })

    // Its own scope: only this route reads multipart bodies.
    await app.register(async (form) => {
      await acceptMultipart(form)
      form.post('/avatar', { schema: { summary: 'Upload an avatar (multipart `file`) and show it on your profile', tags: ['users'], body: uploadForm('avatar'), response: ok(User) }, config: { operation: 'users.uploadAvatar' } }, async (request, reply) => {
        const actor = actorOf(request)
        const file = await receiveUpload(core, request, reply, 'avatar')
        try {
          return { data: await users.updateProfile(actor, { avatarUrl: file.url }) }
        } catch (error) {
          // The profile did not take it: the upload would only be a stray file.
          await core.uploads.delete(actor, { fileId: file.id }).catch(() => {})
          throw error
        }
      })
    })
  }
}
