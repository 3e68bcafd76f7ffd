// What an event's audience means (DECISIONS §5, §7): the core decides, the SSE stream only asks.
// `room`: the room's members who may still see it (a private room: only its creator; a deleted
// room: nobody); `office`: the office's members now; `users`: exactly those users. One indexed
// query per call.
import type { CoreDeps } from './deps.js'
import type { Audience } from './events.js'
import { isMember, memberIds } from './offices/offices.repository.js'
import { isVisibleMember, visibleMemberIds } from './rooms/room-members.repository.js'

export interface AudienceResolver {
  recipientsOf (audience: Audience): Promise<ReadonlySet<string>>
  canSee (userId: string, audience: Audience): Promise<boolean>
}

export function createAudience (deps: Pick<CoreDeps, 'db'>): AudienceResolver {
  const { db } = deps
  return {
    async recipientsOf (audience) {
      if (audience.kind === 'users') return new Set(audience.userIds)
      if (audience.kind === 'office') return new Set(await memberIds(db, audience.officeId))
      return new Set(await visibleMemberIds(db, audience.roomId, audience.sparkId))
    },
    async canSee (userId, audience) {
      if (audience.kind === 'users') return audience.userIds.includes(userId)
      if (audience.kind === 'office') return await isMember(db, audience.officeId, userId)
      return await isVisibleMember(db, audience.roomId, userId, audience.sparkId)
    }
  }
}
