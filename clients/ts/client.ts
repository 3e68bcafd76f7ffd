// A small TypeScript client of the canvas service with Connect-ES, on the stubs the project's buf
// generates (`npm run generate` → src/gen; in a project of your own, clients/ts/buf.gen.yaml). It
// calls the gateway both ways a client may: under /rpc (SPEC) and at the standard gRPC paths, each
// with the gRPC protocol over h2c (createGrpcTransport) and the Connect protocol
// (createConnectTransport): the health check, a reflection listing, sign-in by magic link and poll,
// list and create rooms, and a refusal decoded with its google.rpc.BadRequest details. It prints
// what it did, then one JSON line (test/client-ts.test.ts reads it).
//
//   npx tsx clients/ts/client.ts --url http://127.0.0.1:8080 --email you@example.com [--link URL | --outbox DATA_DIR/outbox]
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { Code, ConnectError, createClient, type Interceptor, type Transport } from '@connectrpc/connect'
import { createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node'
import { AuthService, LoginStatus } from '../../src/gen/app/auth/v1/auth_pb.js'
import { RoomsService } from '../../src/gen/app/rooms/v1/rooms_pb.js'
import { BadRequestSchema } from '../../src/gen/google/rpc/error_details_pb.js'
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from '../../src/gen/grpc/health/v1/health_pb.js'
import { ServerReflection } from '../../src/gen/grpc/reflection/v1/reflection_pb.js'

/** What one transport did. */
export interface TransportRun {
  transport: string
  health: string
  services: string[]
  roomId: string
  listedCreatedRoom: boolean
  refusal: { code: string, message: string, violations: Array<{ field: string, description: string }> }
}

export interface Summary { email: string, runs: TransportRun[] }

const { values: args } = parseArgs({ options: { url: { type: 'string' }, email: { type: 'string' }, link: { type: 'string' }, outbox: { type: 'string' } } })
if (args.url === undefined || args.email === undefined) {
  console.error('usage: client.ts --url http://host:port --email you@example.com [--link URL | --outbox DIR]')
  process.exit(2)
}
const url = args.url
const email = args.email

/** Adds the access token to every call (a Bearer token, as the gateway reads it). */
const bearer = (token: string): Interceptor => (next) => async (request) => {
  request.header.set('authorization', `Bearer ${token}`)
  return await next(request)
}

/** The four ways in: two protocols, each at /rpc and at the standard paths. */
function transports (token?: string): Array<[string, Transport]> {
  const interceptors = token === undefined ? [] : [bearer(token)]
  return [
    ['gRPC /rpc', createGrpcTransport({ baseUrl: `${url}/rpc`, interceptors })],
    ['gRPC standard paths', createGrpcTransport({ baseUrl: url, interceptors })],
    ['Connect /rpc', createConnectTransport({ baseUrl: `${url}/rpc`, httpVersion: '1.1', interceptors })],
    ['Connect standard paths', createConnectTransport({ baseUrl: url, httpVersion: '2', interceptors })]
  ]
}

/** Sign-in: RequestLogin, the mailed link opened (AuthorizeLogin does what the browser does), PollLoginStatus until COMPLETED. */
async function signIn (transport: Transport): Promise<string> {
  const auth = createClient(AuthService, transport)
  const { pollToken } = await auth.requestLogin({ email })
  const link = args.link ?? await linkFromOutbox(args.outbox)
  const token = /token=([A-Za-z0-9_-]+)/.exec(link)?.[1] ?? link
  await auth.authorizeLogin({ token })
  for (let attempt = 0; attempt < 60; attempt++) {
    const status = await auth.pollLoginStatus({ pollToken })
    if (status.status === LoginStatus.COMPLETED && status.accessToken !== undefined) return status.accessToken
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
  throw new Error('sign-in did not complete')
}

/** The newest mail to the address in the service's outbox folder (DATA_DIR/outbox, where mail goes without SMTP). */
async function linkFromOutbox (outbox: string | undefined): Promise<string> {
  if (outbox === undefined) throw new Error('no --link and no --outbox: pass the link from the e-mail')
  for (let attempt = 0; attempt < 50; attempt++) {
    const names = (await readdir(outbox).catch(() => [])).filter((n) => n.endsWith('.json')).sort().reverse()
    for (const name of names) {
      const mail = JSON.parse(await readFile(join(outbox, name), 'utf8')) as { to: string, text: string }
      if (mail.to === email.toLowerCase()) return mail.text
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  throw new Error(`no mail to ${email} in ${outbox}`)
}

/** The services the server lists by reflection (a bidirectional stream: HTTP/2 only, so gRPC here). */
async function listServices (transport: Transport): Promise<string[]> {
  const reflection = createClient(ServerReflection, transport)
  async function * ask (): AsyncGenerator<{ messageRequest: { case: 'listServices', value: string } }> {
    yield { messageRequest: { case: 'listServices', value: '*' } }
  }
  for await (const answer of reflection.serverReflectionInfo(ask())) {
    if (answer.messageResponse.case === 'listServicesResponse') return answer.messageResponse.value.service.map((s) => s.name)
  }
  return []
}

async function run (name: string, anonymous: Transport, signedIn: Transport): Promise<TransportRun> {
  const health = await createClient(Health, anonymous).check({})
  const services = name.startsWith('gRPC') ? await listServices(anonymous) : []
  const rooms = createClient(RoomsService, signedIn)
  const created = await rooms.createRoom({ name: `From TypeScript (${name})` })
  const listed = await rooms.listRooms({ limit: 100 })
  const roomId = created.room?.id ?? ''
  console.log(`${name}: health ${ServingStatus[health.status]}, created ${roomId}, ${listed.pagination?.total ?? 0} rooms`)

  let refusal: TransportRun['refusal'] = { code: 'none', message: '', violations: [] }
  try {
    await rooms.createRoom({ name: '' })
  } catch (error) {
    const refused = ConnectError.from(error)
    const violations = refused.findDetails(BadRequestSchema).flatMap((d) => d.fieldViolations.map((v) => ({ field: v.field, description: v.description })))
    refusal = { code: Code[refused.code], message: refused.rawMessage, violations }
    for (const v of violations) console.log(`  refused: ${v.field}: ${v.description}`)
  }
  return { transport: name, health: ServingStatus[health.status], services, roomId, listedCreatedRoom: listed.rooms.some((r) => r.id === roomId), refusal }
}

const accessToken = await signIn(createConnectTransport({ baseUrl: `${url}/rpc`, httpVersion: '1.1' }))
console.log(`signed in as ${email}`)
const anonymous = transports()
const signedIn = transports(accessToken)
const runs: TransportRun[] = []
for (const [index, [name, transport]] of anonymous.entries()) runs.push(await run(name, transport, signedIn[index]![1]))
const summary: Summary = { email, runs }
console.log(JSON.stringify(summary))
