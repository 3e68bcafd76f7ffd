// app.shelves.v1.ShelvesService: message ↔ core mapping only.
import type { ServiceImpl } from '@connectrpc/connect'
import type { Core } from '../core/index.js'
import type { ShelfSummary } from '../core/shelves/shelves.types.js'
import { ShelvesService } from '../gen/app/shelves/v1/shelves_pb.js'
import { idempotentCall } from './idempotency.js'
import { actorOf } from './context.js'

export function shelvesService (core: Core): ServiceImpl<typeof ShelvesService> {
  const { shelves } = core
  return {
    async listShelves (req, ctx) {
      const { items, pagination } = await shelves.list(actorOf(ctx), { page: req.page, limit: req.limit, userId: req.userId })
      return { shelves: items.map((s: ShelfSummary) => ({ ...s, links: [] })), pagination }
    },
    async getShelf (req, ctx) {
      return { shelf: await shelves.get(actorOf(ctx), { shelfId: req.shelfId }) }
    },
    async createShelf (req, ctx) {
      return await idempotentCall(core, ctx, async () => ({ shelf: await shelves.create(actorOf(ctx), { name: req.name, description: req.description, isPublic: req.isPublic }) }))
    },
    async updateShelf (req, ctx) {
      return { shelf: await shelves.update(actorOf(ctx), { shelfId: req.shelfId, name: req.name, description: req.description, isPublic: req.isPublic }) }
    },
    async deleteShelf (req, ctx) {
      await shelves.delete(actorOf(ctx), { shelfId: req.shelfId })
      return {}
    },
    async addLink (req, ctx) {
      return await idempotentCall(core, ctx, async () => ({ link: await shelves.addLink(actorOf(ctx), { shelfId: req.shelfId, url: req.url, title: req.title, afterLinkId: req.afterLinkId }) }))
    },
    async removeLink (req, ctx) {
      await shelves.removeLink(actorOf(ctx), { shelfId: req.shelfId, linkId: req.linkId })
      return {}
    },
    async moveLink (req, ctx) {
      return { link: await shelves.moveLink(actorOf(ctx), { shelfId: req.shelfId, linkId: req.linkId, afterLinkId: req.afterLinkId }) }
    }
  }
}
