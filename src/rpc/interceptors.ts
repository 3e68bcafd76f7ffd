// Every RPC call passes here: src/admission.ts decides (caller from the Bearer token, then rate
// limit, then the method's access class); the caller goes into the call's context, the rate-limit
// headers onto the reply or the error, and any error leaving a handler is translated to the Connect
// error model.
import type { Interceptor } from '@connectrpc/connect'
import { admit, bearerTokenOf } from '../admission.js'
import type { Core } from '../core/index.js'
import type { Limiter } from '../ratelimit/limiter.js'
import { policyOf } from './access.js'
import { actorKey, httpRequestKey } from './context.js'
import { toConnectError } from './errors.js'

export function accessInterceptor (core: Core, limiter: Limiter | undefined, logError: (error: unknown) => void): Interceptor {
  return (next) => async (request) => {
    let limitHeaders: Array<[string, string]> = []
    try {
      const { access, tier } = policyOf(request.service.typeName, request.method.name)
      const http = request.contextValues.get(httpRequestKey)
      if (http === null) throw new Error('RPC call without its Fastify request: contextValues is not configured')
      const admission = await admit(core, limiter, {
        access,
        tier,
        credential: bearerTokenOf(request.header.get('authorization')),
        http,
        credentialRequired: 'A Bearer token is required.'
      })
      limitHeaders = admission.headers
      request.contextValues.set(actorKey, admission.actor)
      if (admission.refusal !== null) throw admission.refusal
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
