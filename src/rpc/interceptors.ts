// Every error leaving an RPC handler is translated to the Connect error model here (AppError kinds
// to codes, anything unexpected masked as internal); the gate (gate.ts) has admitted the call before.
import type { Interceptor } from '@connectrpc/connect'
import { toConnectError } from './errors.js'

export function errorInterceptor (logError: (error: unknown) => void): Interceptor {
  return (next) => async (request) => {
    try {
      return await next(request)
    } catch (error) {
      throw toConnectError(error, logError)
    }
  }
}
