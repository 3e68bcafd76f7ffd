// Idempotency-Key on the RPC create methods (issue 33): the same rule as REST (src/core/idempotency),
// through an `Idempotency-Key` request header. The first call's response message is stored (binary,
// whatever the caller's encoding) and a retry with the same key and the same request message gets it
// again, with `Idempotent-Replayed: true`. A call that fails stores nothing and frees the key: the
// create did not happen, and a retry runs it.
import { create, fromBinary, toBinary, type Message } from '@bufbuild/protobuf'
import type { HandlerContext } from '@connectrpc/connect'
import type { Core } from '../core/index.js'
import { requestFingerprint } from '../core/idempotency/idempotency.js'
import { IDEMPOTENCY_HEADER } from '../core/idempotency/idempotency.types.js'
import { optionalActorOf } from './context.js'

export async function idempotentCall<T extends object> (core: Core, ctx: HandlerContext, request: Message, run: () => Promise<T>): Promise<T> {
  const key = core.idempotency.parseKey(ctx.requestHeader.get(IDEMPOTENCY_HEADER))
  const actor = optionalActorOf(ctx)
  if (key === undefined || actor === null) return await run()
  const { input, output } = ctx.method
  const fingerprint = requestFingerprint(`rpc ${ctx.service.typeName}/${ctx.method.name}`, toBinary(input, request))
  const claim = await core.idempotency.claim(actor.userId, key, fingerprint)
  if (claim.kind === 'replay') {
    ctx.responseHeader.set('idempotent-replayed', 'true')
    // A full message is a valid init shape of its own type.
    return fromBinary(output, Buffer.from(claim.answer.body, 'base64')) as unknown as T
  }
  let result: T
  try {
    result = await run()
  } catch (error) {
    await claim.release().catch(() => {})
    throw error
  }
  const body = Buffer.from(toBinary(output, create(output, result as never))).toString('base64')
  await claim.finish({ status: 200, headers: {}, body }).catch(() => {})
  return result
}
