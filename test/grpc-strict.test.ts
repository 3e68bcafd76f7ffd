// A strict gRPC client we did not write: Python grpcio (the C-core stack), from Debian's python3-grpcio,
// through test/helpers/grpcio_client.py, over h2c and over TLS. It reads a call's status only from
// trailers or from a HEADERS frame that ends the stream, so every refusal the RPC gate makes (no,
// forged, altered or `alg: none` token, over the rate limit) and an unknown method must arrive as a
// true trailers-only reply to reach it as its code, message and metadata; errors raised in handlers
// (PERMISSION_DENIED, INVALID_ARGUMENT with its details) come through Connect's own trailers.
import t from 'tap'
import { execFile, execFileSync, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { create, fromBinary, toBinary, type DescMessage, type MessageInitShape } from '@bufbuild/protobuf'
import { GetMeResponseSchema, PingRequestSchema } from '../src/gen/app/auth/v1/auth_pb.js'
import { CreateRoomRequestSchema, UpdateRoomRequestSchema } from '../src/gen/app/rooms/v1/rooms_pb.js'
import { BadRequestSchema } from '../src/gen/google/rpc/error_details_pb.js'
import { findTrailerError } from '@connectrpc/connect/protocol-grpc'
import { lastMailTo, startApp, uniqueClientIp, uniqueEmail, type TestApp } from './helpers/app.js'
import { signInWithCookie } from './helpers/sign-in.js'
import { temporaryDir } from './helpers/temp-dirs.js'

const PYTHON = '/usr/bin/python3'
const CLIENT = join(import.meta.dirname, 'helpers', 'grpcio_client.py')
const grpcio = spawnSync(PYTHON, ['-c', 'import grpc; print(grpc.__version__)'], { encoding: 'utf8' })
if (grpcio.status !== 0) {
  t.plan(0, `Python grpcio is not installed (apt-get install python3-grpcio python3-protobuf): ${grpcio.stderr || String(grpcio.error)}`)
} else {
  t.comment(`grpcio ${grpcio.stdout.trim()}`)
  await run()
}

interface Call { path: string, body?: string, metadata?: Array<[string, string]> }
interface Outcome { code: string, details: string, initial: Array<[string, string]>, trailing: Array<[string, string]>, body: string | null }
interface Target { address: string, tls: { ca: string, serverName: string } | null }

/** Makes the calls in order on one grpcio channel. Asynchronous: the server runs in this process. */
async function grpcioCalls (target: Target, calls: Call[]): Promise<Outcome[]> {
  return await new Promise((resolve, reject) => {
    const child = execFile(PYTHON, [CLIENT], { timeout: 60_000 }, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`${error.message}\n${stderr}`))
      else resolve(JSON.parse(stdout) as Outcome[])
    })
    child.stdin?.end(JSON.stringify({ target: target.address, tls: target.tls, calls }))
  })
}

function encode<Desc extends DescMessage> (schema: Desc, init: MessageInitShape<Desc>): string {
  return Buffer.from(toBinary(schema, create(schema, init))).toString('base64')
}

function bearer (token: string): Array<[string, string]> {
  return [['authorization', `Bearer ${token}`]]
}

function metadataOf (outcome: Outcome): Record<string, string> {
  return Object.fromEntries([...outcome.initial, ...outcome.trailing])
}

/** A signed-in user's access token, fetched through `inject`, which works on the TLS app too (its
 *  certificate is self-signed): RequestLogin, AuthorizeLogin with the mailed token, PollLoginStatus. */
async function accessToken (app: TestApp, email: string): Promise<string> {
  const rpc = async (method: string, payload: object): Promise<Record<string, string>> => {
    const reply = await app.app.inject({ method: 'POST', url: `/rpc/app.auth.v1.AuthService/${method}`, payload, headers: { 'x-forwarded-for': uniqueClientIp() } })
    if (reply.statusCode !== 200) throw new Error(`${method}: ${reply.statusCode} ${reply.body}`)
    return reply.json()
  }
  const { pollToken = '' } = await rpc('RequestLogin', { email })
  await rpc('AuthorizeLogin', { token: lastMailTo(app.config, email).token })
  return (await rpc('PollLoginStatus', { pollToken })).accessToken ?? ''
}

/** The same token with its claims changed and the signature kept, and one signed with `alg: none`. */
function tamperedTokens (token: string): { altered: string, algNone: string } {
  const [, payload = '', signature = ''] = token.split('.')
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>
  const other = Buffer.from(JSON.stringify({ ...claims, sub: 'user_someone_else' })).toString('base64url')
  const none = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')
  return { altered: `${token.split('.')[0] ?? ''}.${other}.${signature}`, algNone: `${none}.${payload}.` }
}

async function run (): Promise<void> {
  const dir = temporaryDir('canvas-grpcio-')
  const key = join(dir, 'key.pem')
  const cert = join(dir, 'cert.pem')
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1',
    '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost'], { stdio: 'ignore' })

  // The standard tier (Ping's) allows 3 calls a minute per client, so the fourth is refused.
  const limits = { RATE_LIMIT_MAX_REQUESTS: '3' }
  const h2c = await startApp(limits)
  t.teardown(h2c.close)
  const overTls = await startApp({ ...limits, TLS_CERT_FILE: cert, TLS_KEY_FILE: key })
  t.teardown(overTls.close)

  const targets: Array<[string, TestApp, Target]> = [
    ['h2c', h2c, { address: `127.0.0.1:${new URL(h2c.url).port}`, tls: null }],
    ['TLS', overTls, { address: `127.0.0.1:${new URL(overTls.url).port}`, tls: { ca: readFileSync(cert, 'utf8'), serverName: 'localhost' } }]
  ]
  for (const [name, app, target] of targets) {
    t.test(`${name}: every refusal of the gate and an unknown method reach grpcio as their status, message and metadata`, async (t) => {
      const owner = { email: uniqueEmail('grpcio-owner'), token: '' }
      owner.token = await accessToken(app, owner.email)
      const { altered, algNone } = tamperedTokens(owner.token)
      const getMe = '/rpc/app.auth.v1.AuthService/GetMe'
      const ping: Call = { path: '/rpc/app.auth.v1.AuthService/Ping', body: encode(PingRequestSchema, { message: 'strict' }) }
      const [ok, none, forged, alteredOutcome, noneAlg, unknownMethod, unknownService, ...pings] = await grpcioCalls(target, [
        { path: getMe, metadata: bearer(owner.token) },
        { path: getMe },
        { path: getMe, metadata: bearer('not.a.token') },
        { path: getMe, metadata: bearer(altered) },
        { path: getMe, metadata: bearer(algNone) },
        { path: '/rpc/app.auth.v1.AuthService/NoSuchMethod', metadata: bearer(owner.token) },
        { path: '/rpc/app.nothing.v1.NothingService/Call' },
        ping, ping, ping, ping
      ]) as [Outcome, Outcome, Outcome, Outcome, Outcome, Outcome, Outcome, ...Outcome[]]

      t.equal(ok.code, 'OK', 'a valid call passes')
      t.equal(fromBinary(GetMeResponseSchema, Buffer.from(ok.body ?? '', 'base64')).user?.email, owner.email)
      t.same([none.code, none.details], ['UNAUTHENTICATED', 'A Bearer token is required.'], 'no token')
      t.same([forged.code, forged.details], ['UNAUTHENTICATED', 'Invalid token'], 'forged token')
      t.same([alteredOutcome.code, alteredOutcome.details], ['UNAUTHENTICATED', 'Invalid token'], 'altered token')
      t.same([noneAlg.code, noneAlg.details], ['UNAUTHENTICATED', 'Invalid token'], '`alg: none` token')
      for (const refused of [none, forged, alteredOutcome, noneAlg]) {
        t.match(metadataOf(refused), { 'ratelimit-limit': /^\d+$/, 'ratelimit-remaining': /^\d+$/ }, 'refusals carry the rate-limit metadata')
      }
      t.same([unknownMethod.code, unknownMethod.details], ['UNIMPLEMENTED', 'No procedure POST /rpc/app.auth.v1.AuthService/NoSuchMethod'], 'unknown method')
      t.same([unknownService.code, unknownService.details], ['UNIMPLEMENTED', 'No procedure POST /rpc/app.nothing.v1.NothingService/Call'], 'unknown service')

      t.same(pings.map((p) => p.code), ['OK', 'OK', 'OK', 'RESOURCE_EXHAUSTED'], 'the fourth Ping is over the limit')
      const limited = pings[3]!
      t.match(limited.details, /^Too many requests/)
      t.match(metadataOf(limited), { 'retry-after': /^\d+$/, 'ratelimit-limit': '3', 'ratelimit-remaining': '0', 'ratelimit-reset': /^\d+$/ }, 'with Retry-After and the rate-limit metadata')
    })

    t.test(`${name}: errors raised in handlers reach grpcio too (PERMISSION_DENIED; INVALID_ARGUMENT with its field violations)`, async (t) => {
      const owner = await signInWithCookie(app)
      const ownerToken = await accessToken(app, owner.email)
      const strangerToken = await accessToken(app, uniqueEmail('grpcio-stranger'))
      const created = await app.app.inject({ method: 'POST', url: '/api/rooms', cookies: { app_session: owner.cookie }, payload: { name: 'strict clients', isPublic: true } })
      const roomId = (created.json() as { data: { id: string } }).data.id
      const [denied, invalid] = await grpcioCalls(target, [
        { path: '/rpc/app.rooms.v1.RoomsService/UpdateRoom', body: encode(UpdateRoomRequestSchema, { roomId, name: 'taken over' }), metadata: bearer(strangerToken) },
        { path: '/rpc/app.rooms.v1.RoomsService/CreateRoom', body: encode(CreateRoomRequestSchema, { name: '' }), metadata: bearer(ownerToken) }
      ]) as [Outcome, Outcome]
      t.equal(denied.code, 'PERMISSION_DENIED')
      t.ok(denied.details.length > 0, `with its message: ${denied.details}`)
      t.equal(invalid.code, 'INVALID_ARGUMENT')
      // Decoded from grpc-status-details-bin as a gRPC client library does (Connect's own decoder).
      const decoded = findTrailerError(new Headers([...invalid.trailing, ['grpc-status', '3']]))
      const violations = decoded?.findDetails(BadRequestSchema).flatMap((d) => d.fieldViolations) ?? []
      t.same(violations.map((v) => v.field), ['name'], 'a google.rpc.BadRequest detail naming the field')
    })
  }
}
