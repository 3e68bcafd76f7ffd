// The business core: every operation both transports call.
import { createAudience } from './audience.js'
import { createAuth } from './auth/auth.js'
import { createCanvas } from './canvas/canvas.js'
import { createCursors } from './cursors/cursors.js'
import type { CoreDeps } from './deps.js'
import { createInvites } from './offices/invites.js'
import { createOffices } from './offices/offices.js'
import { createRooms } from './rooms/rooms.js'
import { createSparks } from './sparks/sparks.js'
import { createUploads } from './uploads/uploads.js'

export function createCore (deps: CoreDeps) {
  return {
    auth: createAuth(deps),
    audience: createAudience(deps),
    rooms: createRooms(deps),
    sparks: createSparks(deps),
    canvas: createCanvas(deps),
    offices: createOffices(deps),
    invites: createInvites(deps),
    cursors: createCursors(deps.cursorFeed, createAudience(deps)),
    uploads: createUploads(deps)
  }
}

export type Core = ReturnType<typeof createCore>
