// The business core: every operation both transports call.
import { createAdmin } from './admin/admin.js'
import { createAudience } from './audience.js'
import { createAuth } from './auth/auth.js'
import { createCanvas } from './canvas/canvas.js'
import { createCursors } from './cursors/cursors.js'
import type { CoreDeps } from './deps.js'
import { createIdempotency } from './idempotency/idempotency.js'
import { createInvites } from './offices/invites.js'
import { createPresence } from './presence/presence.js'
import { createOffices } from './offices/offices.js'
import { createPassports } from './passport/passport.js'
import { createShelves } from './shelves/shelves.js'
import { createRooms } from './rooms/rooms.js'
import { createSparks } from './sparks/sparks.js'
import { createUsers } from './users/users.js'
import { createRtc } from './rtc/rtc.js'
import { createUploads } from './uploads/uploads.js'
import { createMessages } from './safety/messages.js'
import { createSafety } from './safety/safety.js'
import { findUpload } from './uploads/uploads.repository.js'
import { uploadIdOfUrl } from './uploads/uploads.types.js'

export function createCore (deps: CoreDeps) {
  const auth = createAuth(deps)
  return {
    auth,
    users: createUsers(deps, {
      userChanged: auth.userChanged,
      isOwnAvatarUpload: async (userId, url) => {
        const fileId = uploadIdOfUrl(deps.config.appUrl, url)
        return fileId !== undefined && await findUpload(deps.db, fileId, { owner: userId, kind: 'avatar' }) !== undefined
      }
    }),
    audience: createAudience(deps),
    rooms: createRooms(deps),
    sparks: createSparks(deps),
    canvas: createCanvas(deps),
    offices: createOffices(deps),
    invites: createInvites(deps),
    rtc: createRtc(deps),
    cursors: createCursors(deps.cursorFeed, createAudience(deps)),
    presence: createPresence(deps),
    uploads: createUploads(deps, { userChanged: auth.userChanged }),
    shelves: createShelves(deps),
    passports: createPassports(deps),
    idempotency: createIdempotency(deps),
    safety: createSafety(deps),
    messages: createMessages(deps),
    admin: createAdmin(deps)
  }
}

export type Core = ReturnType<typeof createCore>
