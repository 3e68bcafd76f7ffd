// Idempotency-Key on the RPC create methods (issue 33, DECISIONS §15 and §17): the same rule as REST
// (src/core/idempotency), through an `Idempotency-Key` request header. The call's closure runs within
// the key's call: the create it makes runs once, and a retry with the same key and the same request
// gets its outcome back through the same closure — the same response message, with
// `Idempotent-Replayed: true` — or its refusal. A request still running is ABORTED with Retry-After.
import type { HandlerContext } from '@connectrpc/connect'
import type { Core } from '../core/index.js'
import { IDEMPOTENCY_HEADER } from '../core/idempotency/idempotency.types.js'
import { optionalActorOf } from './context.js'

export async function idempotentCall<T> (core: Core, ctx: HandlerContext, run: () => Promise<T>): Promise<T> {
  const key = core.idempotency.parseKey(ctx.requestHeader.get(IDEMPOTENCY_HEADER))
  const actor = optionalActorOf(ctx)
  if (key === undefined || actor === null) return await run()
  // A unary request message is whole before the method runs: the create claims the key itself.
  const call = await core.idempotency.open({ id: actor.userId, accountId: actor.userId }, key, `rpc ${ctx.service.typeName}/${ctx.method.name}`, { claimNow: false })
  try {
    const result = await core.idempotency.within(call, run)
    if (call.replayed) ctx.responseHeader.set('idempotent-replayed', 'true')
    return result
  } finally {
    await core.idempotency.settle(call)
  }
}
