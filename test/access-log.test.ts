// One access line per request and X-Request-Id (issue 31 items 2 and 3, DECISIONS §15 and §16): the
// app logs at `info` (as `npm start` does) into a stream the test reads. Every request — REST and
// RPC, answered, refused by the gate, unknown, malformed — gets exactly one line `request` with the
// method, route pattern, status, duration, request id, user (when signed in), client address,
// operation and bytes; Fastify's own two lines are gone; no line holds a magic-link, invite or poll
// token. Every response carries X-Request-Id: the client's when it is fit, else a generated one,
// and it is the `reqId` of the request's lines.
import t from 'tap'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { lastMailTo, testEnv, uniqueClientIp, uniqueEmail } from './helpers/app.js'
import { recordLogs, type LogLine } from './helpers/logs.js'
import { signInPerson } from './helpers/people.js'
import { rpcClient } from './helpers/sign-in.js'
import { AuthService } from '../src/gen/app/auth/v1/auth_pb.js'

const logs = recordLogs()
const config = loadConfig(testEnv({ LOG_LEVEL: 'info', CORS_ORIGIN: 'http://web.test' }))
const app = await buildApp(config, { logStream: logs.stream })
const url = await app.listen({ port: 0, host: '127.0.0.1' })
t.teardown(async () => { await app.close() })
const s = { app, config, url, close: async () => {} }

const accessLines = (from = 0): LogLine[] => logs.matching((line) => line.msg === 'request', from)
/** The access lines of one request id (the line is written once the response is done: wait for it). */
async function linesOf (requestId: string): Promise<LogLine[]> {
  await logs.waitFor((line) => line.msg === 'request' && line.reqId === requestId)
  return accessLines().filter((line) => line.reqId === requestId)
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

t.test('X-Request-Id: a fit client id is kept; anything else is replaced by a generated one', async (t) => {
  const kept = await fetch(`${url}/health`, { headers: { 'x-request-id': 'lb-1:trace.42_a-b' } })
  t.equal(kept.headers.get('x-request-id'), 'lb-1:trace.42_a-b', 'kept')
  const longest = 'a'.repeat(64)
  t.equal((await fetch(`${url}/health`, { headers: { 'x-request-id': longest } })).headers.get('x-request-id'), longest, '64 characters: kept')
  for (const unfit of ['a'.repeat(65), 'has space', 'semi;colon', 'émile', '']) {
    const id = (await fetch(`${url}/health`, { headers: { 'x-request-id': unfit } })).headers.get('x-request-id')
    t.match(id, UUID, `${JSON.stringify(unfit.slice(0, 12))}: replaced`)
  }
  const first = (await fetch(`${url}/health`)).headers.get('x-request-id')
  const second = (await fetch(`${url}/health`)).headers.get('x-request-id')
  t.match(first, UUID, 'none sent: one is generated')
  t.not(first, second, 'a new one each time')
})

t.test('every response carries it: REST and RPC, answered, refused by the gate, unknown, malformed, preflights', async (t) => {
  const person = await signInPerson(s, 'ids')
  const room = (await person.rest('POST', '/api/rooms', { name: 'Ids', isPublic: false })).json().data.id as string
  const rpc = (path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> => fetch(`${url}/rpc/${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body)
  })
  const cases: Array<[string, () => Promise<{ status: number, id: string | null | undefined }>, number]> = [
    ['REST answered', async () => { const r = await person.rest('GET', `/api/rooms/${room}`); return { status: r.statusCode, id: r.headers['x-request-id'] as string } }, 200],
    ['REST refused by the gate', async () => { const r = await fetch(`${url}/api/rooms/${room}`); return { status: r.status, id: r.headers.get('x-request-id') } }, 401],
    ['REST invalid input', async () => { const r = await person.rest('POST', '/api/rooms', { name: '' }); return { status: r.statusCode, id: r.headers['x-request-id'] as string } }, 400],
    ['unknown path', async () => { const r = await fetch(`${url}/nothing-here`); return { status: r.status, id: r.headers.get('x-request-id') } }, 404],
    ['wrong method', async () => { const r = await fetch(`${url}/health`, { method: 'DELETE' }); return { status: r.status, id: r.headers.get('x-request-id') } }, 405],
    ['bad percent-encoding', async () => { const r = await fetch(`${url}/api/rooms/%E0%A4%A`); return { status: r.status, id: r.headers.get('x-request-id') } }, 400],
    ['RPC answered', async () => { const r = await rpc('app.rooms.v1.RoomsService/GetRoom', { roomId: room }, { authorization: `Bearer ${person.token}` }); return { status: r.status, id: r.headers.get('x-request-id') } }, 200],
    ['RPC refused by the gate', async () => { const r = await rpc('app.rooms.v1.RoomsService/GetRoom', { roomId: room }); return { status: r.status, id: r.headers.get('x-request-id') } }, 401],
    ['RPC gRPC-Web refused by the gate', async () => { const r = await fetch(`${url}/rpc/app.rooms.v1.RoomsService/GetRoom`, { method: 'POST', headers: { 'content-type': 'application/grpc-web+proto' }, body: new Uint8Array(5) }); return { status: r.status, id: r.headers.get('x-request-id') } }, 200],
    ['RPC no such procedure', async () => { const r = await rpc('app.rooms.v1.RoomsService/Nothing', {}); return { status: r.status, id: r.headers.get('x-request-id') } }, 404],
    ['RPC malformed body', async () => { const r = await fetch(`${url}/rpc/app.rooms.v1.RoomsService/GetRoom`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${person.token}` }, body: '{' }); return { status: r.status, id: r.headers.get('x-request-id') } }, 400],
    ['REST preflight', async () => { const r = await fetch(`${url}/api/rooms`, { method: 'OPTIONS', headers: { origin: 'http://web.test', 'access-control-request-method': 'POST' } }); return { status: r.status, id: r.headers.get('x-request-id') } }, 204]
  ]
  for (const [what, call, status] of cases) {
    const answer = await call()
    t.equal(answer.status, status, `${what}: ${status}`)
    t.match(answer.id, UUID, `${what}: carries X-Request-Id`)
  }
  const sent = await person.rest('GET', `/api/rooms/${room}`, undefined, { 'x-request-id': 'client-chosen-1' })
  t.equal(sent.headers['x-request-id'], 'client-chosen-1', 'a client id comes back on REST')
  const rpcSent = await rpc('app.rooms.v1.RoomsService/GetRoom', { roomId: room }, { authorization: `Bearer ${person.token}`, 'x-request-id': 'client-chosen-2' })
  t.equal(rpcSent.headers.get('x-request-id'), 'client-chosen-2', 'and is echoed on RPC')
})

t.test('CORS lets browsers send and read it, on both transports (DECISIONS §14)', async (t) => {
  const rest = await fetch(`${url}/api/auth/me`, { headers: { origin: 'http://web.test' } })
  t.match(rest.headers.get('access-control-expose-headers'), /X-Request-Id/i, 'REST exposes it')
  const preflight = await fetch(`${url}/rpc/app.rooms.v1.RoomsService/GetRoom`, { method: 'OPTIONS', headers: { origin: 'http://elsewhere.test', 'access-control-request-method': 'POST', 'access-control-request-headers': 'x-request-id' } })
  t.match(preflight.headers.get('access-control-allow-headers'), /X-Request-Id/i, 'RPC accepts it')
  const rpc = await fetch(`${url}/rpc/app.rooms.v1.RoomsService/GetRoom`, { method: 'POST', headers: { origin: 'http://elsewhere.test', 'content-type': 'application/json' }, body: '{}' })
  t.match(rpc.headers.get('access-control-expose-headers'), /X-Request-Id/i, 'RPC exposes it')
})

t.test('one access line per request with its fields, Fastify\'s own lines gone', async (t) => {
  const person = await signInPerson(s, 'access')
  const room = (await person.rest('POST', '/api/rooms', { name: 'Access', isPublic: false })).json().data.id as string
  const clientIp = uniqueClientIp()

  const rest = await person.rest('GET', `/api/rooms/${room}`, undefined, { 'x-forwarded-for': clientIp })
  const [line, ...more] = await linesOf(rest.headers['x-request-id'] as string)
  t.equal(more.length, 0, 'one line')
  t.match(line, {
    level: 30,
    msg: 'request',
    method: 'GET',
    route: '/api/rooms/:roomId',
    url: `/api/rooms/${room}`,
    status: 200,
    ms: Number,
    userId: person.userId,
    client: clientIp,
    operation: 'rooms.getRoom',
    bytes: Number(rest.headers['content-length'])
  })

  const rpc = await fetch(`${url}/rpc/app.rooms.v1.RoomsService/GetRoom`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${person.token}`, 'x-forwarded-for': clientIp }, body: JSON.stringify({ roomId: room })
  })
  const rpcLines = await linesOf(rpc.headers.get('x-request-id')!)
  t.equal(rpcLines.length, 1, 'one line for an RPC call')
  t.match(rpcLines[0], { method: 'POST', route: '/rpc/app.rooms.v1.RoomsService/GetRoom', status: 200, userId: person.userId, client: clientIp, operation: 'rooms.getRoom', bytesIn: Number })

  const refused = await fetch(`${url}/api/rooms/${room}`, { headers: { 'x-forwarded-for': clientIp } })
  const refusedLines = await linesOf(refused.headers.get('x-request-id')!)
  t.equal(refusedLines.length, 1, 'one line for a refusal of the gate')
  t.match(refusedLines[0], { status: 401, operation: 'rooms.getRoom', client: clientIp })
  t.equal(refusedLines[0]!.userId, undefined, 'no user when none is known')

  const unknown = await fetch(`${url}/nothing/here`)
  const unknownLines = await linesOf(unknown.headers.get('x-request-id')!)
  t.equal(unknownLines.length, 1, 'one line for an unknown path')
  t.match(unknownLines[0], { status: 404, url: '/nothing/here' })
  t.equal(unknownLines[0]!.route, undefined, 'with no route pattern')

  t.equal(logs.matching((l) => l.msg === 'incoming request' || l.msg === 'request completed').length, 0, 'Fastify\'s own request lines are off')
})

t.test('a request Fastify refuses before routing has its line and id too', async (t) => {
  const res = await fetch(`${url}/api/rooms/${'x'.repeat(201)}`, { headers: { 'x-request-id': 'one-request' } })
  t.equal(res.status, 400)
  t.equal(res.headers.get('x-request-id'), 'one-request')
  const lines = await linesOf('one-request')
  t.equal(lines.length, 1, 'one line')
  t.match(lines[0], { status: 400, method: 'GET' })
})

t.test('no token in any line: sign-in magic link, invite, poll', async (t) => {
  const from = logs.lines.length
  const secrets: string[] = []
  const headers = (): Record<string, string> => ({ 'x-forwarded-for': uniqueClientIp() })

  const email = uniqueEmail('access-link')
  await app.inject({ method: 'POST', url: '/api/auth/request-login', payload: { email }, headers: headers() })
  const { token } = lastMailTo(config, email)
  secrets.push(token)
  await app.inject({ method: 'GET', url: `/api/auth/authorize?token=${token}`, headers: headers() })

  const auth = rpcClient(s, AuthService, { clientIp: uniqueClientIp() })
  const { pollToken } = await auth.requestLogin({ email: uniqueEmail('access-poll') })
  secrets.push(pollToken)
  await auth.pollLoginStatus({ pollToken })
  const message = encodeURIComponent(JSON.stringify({ pollToken }))
  await app.inject({ method: 'GET', url: `/rpc/app.auth.v1.AuthService/PollLoginStatus?connect=v1&encoding=json&message=${message}`, headers: headers() })

  const owner = await signInPerson(s, 'access-owner')
  const guest = await signInPerson(s, 'access-guest')
  const office = (await owner.rest('POST', '/api/offices', { name: 'Access', slug: `access-${Date.now().toString(36)}` })).json().data.id as string
  await owner.rest('POST', `/api/offices/${office}/invites`, { email: guest.email, role: 'member' })
  const invite = lastMailTo(config, guest.email).token
  secrets.push(invite)
  await app.inject({ method: 'GET', url: `/api/invites/${invite}`, headers: headers() })
  t.equal((await guest.rest('POST', '/api/invites/accept', { token: invite })).statusCode, 200, 'accepted')

  await logs.waitFor((line) => line.msg === 'request' && line.operation === 'offices.acceptInvite', 5_000, from)
  const written = logs.lines.slice(from)
  const text = written.map((line) => JSON.stringify(line)).join('\n')
  for (const secret of secrets) t.notOk(text.includes(secret), `no line holds ${secret.slice(0, 6)}…`)
  t.ok(written.some((line) => line.msg === 'request' && line.url === '/api/auth/authorize?token=[REDACTED]'), 'the magic link\'s line, redacted')
  t.ok(written.some((line) => line.msg === 'request' && line.route === '/api/invites/:token' && line.url === '/api/invites/[REDACTED]'), 'the invitation\'s line, redacted')
  t.ok(written.some((line) => line.msg === 'request' && String(line.url).includes('message=[REDACTED]')), 'the Connect GET poll\'s line, redacted')
  t.ok(written.some((line) => line.msg === 'request' && line.operation === 'auth.pollLoginStatus'), 'the poll\'s line')
})
