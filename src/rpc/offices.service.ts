// app.offices.v1.OfficesService: message ↔ core mapping only.
import type { ServiceImpl } from '@connectrpc/connect'
import type { Core } from '../core/index.js'
import { OfficesService } from '../gen/app/offices/v1/offices_pb.js'
import { idempotentCall } from './idempotency.js'
import { actorOf, optionalActorOf } from './context.js'

export function officesService (core: Core): ServiceImpl<typeof OfficesService> {
  const { offices, invites } = core
  return {
    async listOffices (req, ctx) {
      const { items, pagination } = await offices.list(optionalActorOf(ctx), { page: req.page, limit: req.limit, scope: req.scope })
      return { offices: items, pagination }
    },
    async getOffice (req, ctx) {
      return { office: await offices.get(actorOf(ctx), { officeId: req.officeId }) }
    },
    async createOffice (req, ctx) {
      return await idempotentCall(core, ctx, async () => ({ office: await offices.create(actorOf(ctx), { name: req.name, slug: req.slug, description: req.description, isPublic: req.isPublic }) }))
    },
    async updateOffice (req, ctx) {
      return { office: await offices.update(actorOf(ctx), { officeId: req.officeId, name: req.name, slug: req.slug, description: req.description, isPublic: req.isPublic }) }
    },
    async deleteOffice (req, ctx) {
      await offices.delete(actorOf(ctx), { officeId: req.officeId })
      return {}
    },
    async inviteToOffice (req, ctx) {
      return await idempotentCall(core, ctx, async () => ({ invite: await invites.invite(actorOf(ctx), { officeId: req.officeId, email: req.email, role: req.role }) }))
    },
    async getInviteInfo (req) {
      return await invites.info({ token: req.token })
    },
    async acceptInvite (req, ctx) {
      // An empty string is proto3's "not sent": the core takes exactly one of the two.
      return await invites.accept(actorOf(ctx), { token: req.token === '' ? undefined : req.token, inviteId: req.inviteId === '' ? undefined : req.inviteId })
    },
    async listMembers (req, ctx) {
      const { items, pagination } = await offices.listMembers(actorOf(ctx), { officeId: req.officeId, page: req.page, limit: req.limit })
      return { members: items, pagination }
    },
    async removeMember (req, ctx) {
      await offices.removeMember(actorOf(ctx), { officeId: req.officeId, userId: req.userId })
      return {}
    },
    async updateMemberRole (req, ctx) {
      return { member: await offices.updateMemberRole(actorOf(ctx), { officeId: req.officeId, userId: req.userId, role: req.role }) }
    }
  }
}
