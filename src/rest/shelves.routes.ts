// /api/shelves (DECISIONS §10): shelves of links and their order. Parse → one core call → `{ data }`.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Core } from '../core/index.js'
import { AddLinkBody, CreateShelfInput, LinkParams, ListShelvesQuery, MoveLinkBody, ShelfIdParams, UpdateShelfBody } from '../core/shelves/shelves.types.js'
import { actorOf } from './identity.js'
import { Link, Shelf, ShelfSummary, created, list, noContent, ok } from './responses.js'

export function shelfRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<TypeBoxTypeProvider>()
    const { shelves } = core

    r.get('/', { schema: { summary: 'Your shelves', tags: ['shelves'], response: list(ShelfSummary), querystring: ListShelvesQuery }, config: { operation: 'shelves.listShelves' } }, async (request) => {
      const { items, pagination } = await shelves.list(actorOf(request), request.query)
      return { data: items, pagination }
    })

    r.post('/', { schema: { summary: 'Create a shelf', tags: ['shelves'], response: created(Shelf), body: CreateShelfInput }, config: { operation: 'shelves.createShelf', idempotent: true } }, async (request, reply) => {
      return await reply.code(201).send({ data: await shelves.create(actorOf(request), request.body) })
    })

    r.get('/:shelfId', { schema: { summary: 'One shelf with its links', tags: ['shelves'], response: ok(Shelf), params: ShelfIdParams }, config: { operation: 'shelves.getShelf' } }, async (request) => {
      return { data: await shelves.get(actorOf(request), request.params) }
    })

    r.patch('/:shelfId', { schema: { summary: 'Update a shelf', tags: ['shelves'], response: ok(Shelf), params: ShelfIdParams, body: UpdateShelfBody }, config: { operation: 'shelves.updateShelf' } }, async (request) => {
      return { data: await shelves.update(actorOf(request), { ...request.body, shelfId: request.params.shelfId }) }
    })

    r.delete('/:shelfId', { schema: { summary: 'Delete a shelf', tags: ['shelves'], response: noContent, params: ShelfIdParams }, config: { operation: 'shelves.deleteShelf' } }, async (request, reply) => {
      await shelves.delete(actorOf(request), request.params)
      return await reply.code(204).send()
    })

    r.post('/:shelfId/links', { schema: { summary: 'Add a link to a shelf', tags: ['shelves'], response: created(Link), params: ShelfIdParams, body: AddLinkBody }, config: { operation: 'shelves.addLink', idempotent: true } }, async (request, reply) => {
      return await reply.code(201).send({ data: await shelves.addLink(actorOf(request), { ...request.body, shelfId: request.params.shelfId }) })
    })

    r.delete('/:shelfId/links/:linkId', { schema: { summary: 'Remove a link', tags: ['shelves'], response: noContent, params: LinkParams }, config: { operation: 'shelves.removeLink' } }, async (request, reply) => {
      await shelves.removeLink(actorOf(request), request.params)
      return await reply.code(204).send()
    })

    r.post('/:shelfId/links/:linkId/move', { schema: { summary: 'Move a link within its shelf', tags: ['shelves'], response: ok(Link), params: LinkParams, body: MoveLinkBody }, config: { operation: 'shelves.moveLink' } }, async (request) => {
      return { data: await shelves.moveLink(actorOf(request), { ...request.body, ...request.params }) }
    })
  }
}
