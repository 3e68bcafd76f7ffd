// Every RPC call passes here: the Bearer token is resolved to a caller, the method's access class
// enforced, and any error leaving a handler translated to the Connect error model.
import type { Interceptor } from '@connectrpc/connect'
import { AppError } from '../core/errors.js'
import type { Core } from '../core/index.js'
import { policyOf } from './access.js'
import { actorKey } from './context.js'
import { toConnectError } from './errors.js'

function bearerOf (header: string | null): string | undefined {
  if (header === null || !/^Bearer\s+/i.test(header)) return undefined
  const token = header.replace(/^Bearer\s+/i, '').trim()
  return token === '' ? undefined : token
}

export function accessInterceptor (core: Core, logError: (error: unknown) => void): Interceptor {
  return (next) => async (request) => {
    try {
      const { access } = policyOf(request.service.typeName, request.method.name)
      const token = bearerOf(request.header.get('authorization'))
      if (access !== 'public') {
        if (token !== undefined) {
          request.contextValues.set(actorKey, await core.auth.authenticate(token))
        } else if (access === 'required') {
          throw new AppError('unauthenticated', 'A Bearer token is required.')
        }
      }
      return await next(request)
    } catch (error) {
      throw toConnectError(error, logError)
    }
  }
}
