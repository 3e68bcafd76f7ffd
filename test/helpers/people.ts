// One user signed in on both transports (a browser cookie and an RPC access token for the same
// account), so a test can write through one transport and read through the other.
import type { DescService } from '@bufbuild/protobuf'
import { ConnectError, type Client } from '@connectrpc/connect'
import type { LightMyRequestResponse } from 'fastify'
import { uniqueEmail, type TestApp } from './app.js'
import { rpcClient, signInWithCookie, signInWithRpc } from './sign-in.js'

export type RestCall = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, headers?: Record<string, string>) => Promise<LightMyRequestResponse>

export interface Person {
  email: string
  userId: string
  cookie: string
  token: string
  /** A REST request with this user's session cookie. */
  rest: RestCall
  /** A Connect client with this user's Bearer token, JSON by default. */
  rpc: <S extends DescService>(service: S, options?: { binary?: boolean }) => Client<S>
}

export async function signInPerson (t: TestApp, label = 'user', email = uniqueEmail(label)): Promise<Person> {
  const { cookie, userId } = await signInWithCookie(t, email)
  const { accessToken } = await signInWithRpc(t, email)
  return {
    email,
    userId,
    cookie,
    token: accessToken,
    rest: async (method, url, payload, headers = {}) => await t.app.inject({
      method, url, cookies: { app_session: cookie }, headers, ...(payload === undefined ? {} : { payload: payload as object })
    }),
    rpc: (service, options = {}) => rpcClient(t, service, { token: accessToken, binary: options.binary ?? false })
  }
}

/** REST without any credential. */
export function anonymousRest (t: TestApp): RestCall {
  return async (method, url, payload, headers = {}) => await t.app.inject({
    method, url, headers, ...(payload === undefined ? {} : { payload: payload as object })
  })
}

/** The ConnectError a call fails with; throws when it succeeds. */
export async function rpcError (promise: Promise<unknown>): Promise<ConnectError> {
  try {
    await promise
  } catch (error) {
    return ConnectError.from(error)
  }
  throw new Error('expected the RPC call to fail')
}

/** A decoded RPC message as plain JSON data (without protobuf-es's `$typeName`), for deep comparison. */
export function plain<T> (message: T): unknown {
  return JSON.parse(JSON.stringify(message, (key, value: unknown) => key === '$typeName' ? undefined : value))
}
