import { createContextKey, type HandlerContext } from '@connectrpc/connect'
import type { Actor } from '../core/actor.js'
import { AppError } from '../core/errors.js'

/** The caller, resolved by the gate (gate.ts) from the Bearer token. */
export const actorKey = createContextKey<Actor | null>(null, { description: 'caller' })

/** The caller of a Required method (the interceptor has already refused anonymous calls). */
export function actorOf (ctx: HandlerContext): Actor {
  const actor = ctx.values.get(actorKey)
  if (actor === null) throw new AppError('unauthenticated', 'A Bearer token is required.')
  return actor
}

export function optionalActorOf (ctx: HandlerContext): Actor | null {
  return ctx.values.get(actorKey)
}
