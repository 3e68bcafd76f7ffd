import { createContextKey, type HandlerContext } from '@connectrpc/connect'
import type { FastifyRequest } from 'fastify'
import type { Actor } from '../core/actor.js'
import { AppError } from '../core/errors.js'

/** The Fastify request of the call: its socket and forwarding headers give the client address. */
export const httpRequestKey = createContextKey<FastifyRequest | null>(null, { description: 'Fastify request' })

/** The caller, resolved by the access interceptor from the Bearer token. */
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
