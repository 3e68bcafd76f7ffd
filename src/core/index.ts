// The business core: every operation both transports call.
import { createAudience } from './audience.js'
import { createAuth } from './auth/auth.js'
import type { CoreDeps } from './deps.js'

export function createCore (deps: CoreDeps) {
  return {
    auth: createAuth(deps),
    audience: createAudience(deps)
  }
}

export type Core = ReturnType<typeof createCore>
