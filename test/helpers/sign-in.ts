// Signing in the way clients do: the browser follows the mailed link (cookie); the CLI polls (tokens).
import { createClient, type Client } from '@connectrpc/connect'
import { createConnectTransport } from '@connectrpc/connect-node'
import { AuthService } from '../../src/gen/app/auth/v1/auth_pb.js'
import type { DescService } from '@bufbuild/protobuf'
import { lastMailTo, uniqueClientIp, uniqueEmail, type TestApp } from './app.js'

export interface CookieSession { email: string, cookie: string, userId: string }

/** REST sign-in: request a link, open it, keep the `app_session` cookie. Each sign-in comes from its
 *  own client address, so a file signing many users in stays under the per-IP `strict` tier. */
export async function signInWithCookie (t: TestApp, email = uniqueEmail()): Promise<CookieSession> {
  const headers = { 'x-forwarded-for': uniqueClientIp() }
  const requested = await t.app.inject({ method: 'POST', url: '/api/auth/request-login', payload: { email }, headers })
  if (requested.statusCode !== 200) throw new Error(`request-login: ${requested.statusCode} ${requested.body}`)
  const { token } = lastMailTo(t.config, email)
  const authorized = await t.app.inject({ method: 'GET', url: `/api/auth/authorize?token=${token}`, headers })
  const cookie = authorized.cookies.find((c) => c.name === 'app_session')
  if (authorized.statusCode !== 302 || cookie === undefined) throw new Error(`authorize: ${authorized.statusCode} ${authorized.body}`)
  const me = await t.app.inject({ method: 'GET', url: '/api/auth/me', cookies: { app_session: cookie.value } })
  return { email, cookie: cookie.value, userId: (me.json() as { data: { id: string } }).data.id }
}

/** `clientIp` is sent as X-Forwarded-For (the test app trusts its loopback peer). */
export function rpcClient<S extends DescService> (t: TestApp, service: S, options: { binary?: boolean, token?: string, clientIp?: string } = {}): Client<S> {
  const headers: Array<[string, string]> = []
  if (options.token !== undefined) headers.push(['authorization', `Bearer ${options.token}`])
  if (options.clientIp !== undefined) headers.push(['x-forwarded-for', options.clientIp])
  const transport = createConnectTransport({
    baseUrl: `${t.url}/rpc`,
    httpVersion: '1.1',
    useBinaryFormat: options.binary ?? false,
    interceptors: headers.length === 0
      ? []
      : [(next) => async (req) => { for (const [name, value] of headers) req.header.set(name, value); return await next(req) }]
  })
  return createClient(service, transport)
}

export interface RpcSession { email: string, accessToken: string, refreshToken: string, expiresAt: string }

/** RPC sign-in: RequestLogin → AuthorizeLogin with the mailed token → PollLoginStatus. */
export async function signInWithRpc (t: TestApp, email = uniqueEmail(), binary = false): Promise<RpcSession> {
  const auth = rpcClient(t, AuthService, { binary, clientIp: uniqueClientIp() })
  const { pollToken } = await auth.requestLogin({ email })
  const { token } = lastMailTo(t.config, email)
  await auth.authorizeLogin({ token })
  const polled = await auth.pollLoginStatus({ pollToken })
  if (polled.accessToken === undefined || polled.refreshToken === undefined || polled.expiresAt === undefined) throw new Error('poll did not complete')
  return { email, accessToken: polled.accessToken, refreshToken: polled.refreshToken, expiresAt: polled.expiresAt }
}
