// Every RPC call passes here: the Bearer token is resolved to a caller, the call counted against its
// rate-limit tier, the method's access class enforced — in that order, so refused calls are counted
// and carry rate-limit headers too — and any error leaving a handler translated to the Connect
// error model.
import type { Interceptor } from '@connectrpc/connect'
import { AppError } from '../core/errors.js'
import type { Core } from '../core/index.js'
import { policyOf } from './access.js'
import { actorKey } from './context.js'
import { toConnectError } from './errors.js'
import type { Limiter } from '../ratelimit/limiter.js'
import { limitCall } from './rate-limit.js'

function bearerOf (header: string | null): string | undefined {
  if (header === null || !/^Bearer\s+/i.test(header)) return undefined
  const token = header.replace(/^Bearer\s+/i, '').trim()
  return token === '' ? undefined : token
}

export function accessInterceptor (core: Core, limiter: Limiter | undefined, logError: (error: unknown) => void): Interceptor {
  return (next) => async (request) => {
    let limitHeaders: Array<[string, string]> = []
    try {
      const { access, tier } = policyOf(request.service.typeName, request.method.name)
      // 1. Who is calling. A refused token is kept, not thrown yet: the call is counted first.
      const token = bearerOf(request.header.get('authorization'))
      let identityError: AppError | undefined
      if (access !== 'public' && token !== undefined) {
        try {
          request.contextValues.set(actorKey, await core.auth.authenticate(token))
        } catch (error) {
          if (!(error instanceof AppError)) throw error
          identityError = error
        }
      }
      // 2. The rate limit, keyed by the caller resolved above, else by the client address.
      if (limiter !== undefined) {
        const limit = await limitCall(limiter, request.contextValues, tier, request.contextValues.get(actorKey)?.userId ?? null)
        limitHeaders = limit.headers
        if (limit.rejection !== undefined) throw limit.rejection
      }
      // 3. The method's access class.
      if (identityError !== undefined) throw identityError
      if (access === 'required' && request.contextValues.get(actorKey) === null) {
        throw new AppError('unauthenticated', 'A Bearer token is required.')
      }
      const response = await next(request)
      for (const [name, value] of limitHeaders) response.header.set(name, value)
      return response
    } catch (error) {
      const connectError = toConnectError(error, logError)
      for (const [name, value] of limitHeaders) connectError.metadata.set(name, value)
      throw connectError
    }
  }
}
