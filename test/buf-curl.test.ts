// A client we did not write: `buf curl` (binary Protobuf over the Connect protocol) against a running server.
import t from 'tap'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { startApp } from './helpers/app.js'
import { signInWithRpc } from './helpers/sign-in.js'

const run = promisify(execFile)
const s = await startApp()
t.teardown(s.close)

async function bufCurl (method: string, data: string, token?: string): Promise<{ stdout: string, stderr: string, code: number }> {
  const args = ['buf', 'curl', '--protocol', 'connect', '--schema', 'proto', '--data', data,
    ...(token === undefined ? [] : ['-H', `Authorization: Bearer ${token}`]), `${s.url}/rpc/${method}`]
  try {
    const { stdout, stderr } = await run('npx', args, { timeout: 60_000 })
    return { stdout, stderr, code: 0 }
  } catch (error) {
    const e = error as { stdout: string, stderr: string, code: number }
    return { stdout: e.stdout, stderr: e.stderr, code: e.code }
  }
}

t.test('Ping and GetMe through buf curl', async (t) => {
  const ping = await bufCurl('app.auth.v1.AuthService/Ping', '{"message":"hello"}')
  t.equal(ping.code, 0, ping.stderr)
  t.equal(JSON.parse(ping.stdout).message, 'hello')

  const session = await signInWithRpc(s)
  const me = await bufCurl('app.auth.v1.AuthService/GetMe', '{}', session.accessToken)
  t.equal(me.code, 0, me.stderr)
  t.equal(JSON.parse(me.stdout).user.email, session.email)

  const anonymous = await bufCurl('app.auth.v1.AuthService/GetMe', '{}')
  t.not(anonymous.code, 0)
  t.match(anonymous.stderr, /unauthenticated/)
})

t.test('buf curl with no schema, over gRPC at the standard paths: the schema from server reflection (v1, then v1alpha), as grpcurl reads it', async (t) => {
  const curl = async (args: string[]): Promise<string> => (await run('npx', ['buf', 'curl', '--protocol', 'grpc', '--http2-prior-knowledge', ...args], { timeout: 60_000 })).stdout
  for (const version of ['grpc-v1', 'grpc-v1alpha']) {
    const methods = (await curl(['--reflect-protocol', version, '--list-methods', s.url])).trim().split('\n')
    t.ok(methods.includes('app.rooms.v1.RoomsService/GetRoom') && methods.includes('grpc.health.v1.Health/Watch'), `${version}: every method listed (${methods.length})`)
  }
  t.equal(JSON.parse(await curl(['--data', '{"message":"by reflection"}', `${s.url}/app.auth.v1.AuthService/Ping`])).message, 'by reflection', 'a call described by reflection')
  t.same(JSON.parse(await curl([`${s.url}/grpc.health.v1.Health/Check`])), { status: 'SERVING' }, 'the health check')
})
