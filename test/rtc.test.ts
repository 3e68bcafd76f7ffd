// Video/voice tokens (issue 21, DECISIONS §9) on both transports: tokens that Agora's own parser
// reads back with the app id, channel, uid, privileges and expiry asked for and a valid signature;
// every bad field named; an unconfigured server refusing clearly; the token route never limited.
// Who gets one (issue 26 item 3, DECISIONS §16): channels are rooms the caller may open or offices
// they belong to (anything else 404 / NOT_FOUND, a private room indistinguishable from none); a
// numeric uid is its first user's in a channel until that token expires (409 / ALREADY_EXISTS for
// anyone else, exactly one winner of a race on Postgres); a string account is the caller's own id.
import t from 'tap'
import { randomBytes } from 'node:crypto'
// The package's own parser (AccessToken2.from_string / verifySignature), which its index neither
// re-exports nor types.
// @ts-expect-error -- no declaration file for this module of the package
import agoraAccessToken2 from 'agora-token/src/AccessToken2.js'
import { Code } from '@connectrpc/connect'
import { RtcRole, RtcService } from '../src/gen/app/rtc/v1/rtc_pb.js'
import { lastMailTo, movableClock, startApp } from './helpers/app.js'
import { anonymousRest, plain, rpcError, signInPerson, type Person } from './helpers/people.js'
import { ConfigError, loadConfig } from '../src/config.js'
import { temporaryDir } from './helpers/temp-dirs.js'

const { AccessToken2, ServiceRtc } = agoraAccessToken2 as unknown as {
  AccessToken2: new () => AgoraToken
  ServiceRtc: { kPrivilegeJoinChannel: number, kPrivilegePublishAudioStream: number, kPrivilegePublishVideoStream: number, kPrivilegePublishDataStream: number }
}
/** The fields of a parsed AccessToken2 that the test reads (the package ships no types for them). */
interface AgoraToken {
  appId: string
  issueTs: number
  expire: number
  services: Array<{ __type: number, __channel_name: Buffer | string, __uid: Buffer | string, __privileges: Record<number, number> }>
  from_string (token: string): boolean
  verifySignature (certificate: string): boolean
}

const appId = randomBytes(16).toString('hex')
const certificate = randomBytes(16).toString('hex')
const s = await startApp({ RTC_APP_ID: appId, RTC_APP_CERTIFICATE: certificate })
t.teardown(s.close)

/** A room of `owner`'s, as its id (a video/voice channel name). */
async function roomOf (owner: Person, isPublic: boolean): Promise<string> {
  return (await owner.rest('POST', '/api/rooms', { name: 'Call', isPublic })).json().data.id
}

function parsed (token: string): AgoraToken {
  const decoded = new AccessToken2()
  if (!decoded.from_string(token)) throw new Error('Agora\'s parser refused the token')
  return decoded
}

t.test('a token Agora\'s parser accepts: app id, channel, uid, privileges, one hour, signed with the certificate', async (t) => {
  const alice = await signInPerson(s, 'alice')
  const channel = await roomOf(alice, false)
  const before = Math.floor(Date.now() / 1000)
  const res = await alice.rest('POST', '/api/rtc/token', { channelName: channel, uid: '12345', role: 'PUBLISHER' })
  t.equal(res.statusCode, 200)
  const { token, expiresAt, appId: answeredAppId } = res.json().data
  t.equal(answeredAppId, appId)
  const decoded = parsed(token)
  t.ok(decoded.verifySignature(certificate), 'signed with the app certificate')
  t.notOk(decoded.verifySignature(randomBytes(16).toString('hex')), 'and not with another')
  t.equal(decoded.appId.toString(), appId)
  t.ok(decoded.issueTs >= before && decoded.issueTs <= before + 5, 'issued now')
  t.equal(decoded.expire, 3600, 'valid one hour')
  t.equal(Date.parse(expiresAt) / 1000, decoded.issueTs + 3600, 'expiresAt is the token\'s own expiry')
  const [rtc] = decoded.services
  t.equal(rtc?.__type, 1, 'the RTC service')
  t.equal(rtc?.__channel_name.toString(), channel)
  t.equal(rtc?.__uid.toString(), '12345')
  t.same(Object.keys(rtc?.__privileges ?? {}).map(Number).sort(), [
    ServiceRtc.kPrivilegeJoinChannel, ServiceRtc.kPrivilegePublishAudioStream, ServiceRtc.kPrivilegePublishVideoStream, ServiceRtc.kPrivilegePublishDataStream
  ], 'a publisher joins and publishes audio, video and data')
  t.ok(Object.values(rtc?.__privileges ?? {}).every((expire) => expire === 3600))

  for (const binary of [false, true]) {
    const viaRpc = await alice.rpc(RtcService, { binary }).generateToken({ channelName: channel, uid: alice.userId, role: RtcRole.SUBSCRIBER })
    const subscriber = parsed(viaRpc.token).services[0]
    t.equal(subscriber?.__uid.toString(), alice.userId, 'a string account: the caller\'s own id')
    t.same(Object.keys(subscriber?.__privileges ?? {}).map(Number), [ServiceRtc.kPrivilegeJoinChannel], 'a subscriber only joins')
    t.equal(viaRpc.appId, appId)
  }
  const defaulted = await alice.rpc(RtcService).generateToken({ channelName: channel, uid: '4294967295' })
  t.equal(Object.keys(parsed(defaulted.token).services[0]?.__privileges ?? {}).length, 4, 'an unset role is PUBLISHER')
  t.equal((await alice.rest('POST', '/api/rtc/token', { channelName: channel, uid: '7' })).statusCode, 200, 'REST: role optional')
})

t.test('channels: rooms the caller may open and offices they belong to; anything else is 404 / NOT_FOUND alike', async (t) => {
  const owner = await signInPerson(s, 'channel-owner')
  const stranger = await signInPerson(s, 'channel-stranger')
  const privateRoom = await roomOf(owner, false)
  const publicRoom = await roomOf(owner, true)
  const office = (await owner.rest('POST', '/api/offices', { name: 'Call office', slug: `call-${Date.now().toString(36)}` })).json().data.id as string
  const publicOffice = (await owner.rest('POST', '/api/offices', { name: 'Open office', slug: `open-call-${Date.now().toString(36)}`, isPublic: true })).json().data.id as string
  // Each person their own uid: a uid is its first user's in a channel.
  const ask = async (person: Person, channelName: string): Promise<number> => (await person.rest('POST', '/api/rtc/token', { channelName, uid: person === owner ? '1000' : '1001' })).statusCode

  for (const channel of [privateRoom, publicRoom, office, publicOffice]) t.equal(await ask(owner, channel), 200, `the owner: ${channel}`)
  t.equal(await ask(stranger, publicRoom), 200, 'anyone signed in: a public room')
  const refused = new Set<string>()
  for (const [label, channel] of [
    ['a private room of someone else', privateRoom], ['no such room', 'room_doesnotexist00000000'],
    ['an office one is not in', office], ['a public office one is not in', publicOffice],
    ['a name that is no room or office', 'standup'], ['a user id', owner.userId]
  ] as const) {
    const res = await stranger.rest('POST', '/api/rtc/token', { channelName: channel, uid: '2000' })
    t.equal(res.statusCode, 404, `REST: ${label}`)
    refused.add(JSON.stringify(res.json()))
    const error = await rpcError(stranger.rpc(RtcService).generateToken({ channelName: channel, uid: '2000' }))
    t.equal(error.code, Code.NotFound, `RPC: ${label}`)
    refused.add(error.rawMessage)
  }
  t.equal(refused.size, 2, `one answer per transport, whatever the channel: ${[...refused].join(' | ')}`)

  // Joining the office opens its channel; a room turned private closes it to everyone but its owner.
  const invite = await owner.rest('POST', `/api/offices/${office}/invites`, { email: stranger.email, role: 'member' })
  t.equal(invite.statusCode, 201)
  t.equal((await stranger.rest('POST', '/api/invites/accept', { token: lastMailTo(s.config, stranger.email).token })).statusCode, 200)
  t.equal(await ask(stranger, office), 200, 'a member of the office')
  t.equal((await owner.rest('PATCH', `/api/rooms/${publicRoom}`, { isPublic: false })).statusCode, 200)
  t.equal(await ask(stranger, publicRoom), 404, 'the room turned private')
})

t.test('uids: a numeric uid is its first user\'s in a channel until the token expires; a string account is one\'s own id', async (t) => {
  const clock = movableClock()
  const timed = await startApp({ RTC_APP_ID: appId, RTC_APP_CERTIFICATE: certificate }, { clock })
  t.teardown(timed.close)
  const first = await signInPerson(timed, 'uid-first')
  const second = await signInPerson(timed, 'uid-second')
  const room = await roomOf(first, true)
  const other = await roomOf(second, true)
  const ask = async (person: Person, channelName: string, uid: string): Promise<number> => (await person.rest('POST', '/api/rtc/token', { channelName, uid })).statusCode

  t.equal(await ask(first, room, '42'), 200, 'the first user takes uid 42')
  const taken = await second.rest('POST', '/api/rtc/token', { channelName: room, uid: '42' })
  t.equal(taken.statusCode, 409, 'another user: 409')
  t.equal(taken.json().error, 'Conflict')
  t.equal((await rpcError(second.rpc(RtcService).generateToken({ channelName: room, uid: '42' }))).code, Code.AlreadyExists, 'RPC: ALREADY_EXISTS')
  t.equal((await rpcError(second.rpc(RtcService, { binary: true }).generateToken({ channelName: room, uid: '42', role: RtcRole.SUBSCRIBER }))).code, Code.AlreadyExists, 'as a subscriber too')
  t.equal(await ask(second, room, '43'), 200, 'another uid in the same channel')
  t.equal(await ask(second, other, '42'), 200, 'the same uid in another channel')
  t.equal(await ask(first, room, '42'), 200, 'its holder asks again (the claim lasts to the new token\'s expiry)')

  for (const uid of [second.userId, 'someone-else', `${first.userId}x`]) {
    t.equal(await ask(first, room, uid), 403, `a string account other than one's own id: ${uid}`)
    t.equal((await rpcError(first.rpc(RtcService).generateToken({ channelName: room, uid }))).code, Code.PermissionDenied, `RPC: ${uid}`)
  }
  t.equal(await ask(first, room, first.userId), 200, 'one\'s own id')

  // The RPC access tokens expire past here (15 minutes on this clock): REST from now on.
  clock.advance(59 * 60_000)
  t.equal(await ask(second, room, '42'), 409, 'still held within the hour of the newest token')
  clock.advance(60 * 60_000)
  t.equal(await ask(second, room, '42'), 200, 'once that token has expired, the next user takes it')
  t.equal(await ask(first, room, '42'), 409, 'and holds it against the first')
})

t.test('a race for one uid (meaningful on Postgres): exactly one of the users asking at once gets the token', async (t) => {
  const people = await Promise.all(Array.from({ length: 4 }, async (_, i) => await signInPerson(s, `racer-${i}`)))
  const room = await roomOf(people[0]!, true)
  for (let round = 1; round <= 10; round++) {
    const uid = String(5000 + round)
    const statuses = await Promise.all(people.map(async (person, i) => i % 2 === 0
      ? (await person.rest('POST', '/api/rtc/token', { channelName: room, uid })).statusCode
      : await person.rpc(RtcService).generateToken({ channelName: room, uid }).then(() => 200, (error: unknown) => rpcErrorStatus(error))))
    t.same(statuses.filter((status) => status === 200).length, 1, `round ${round}: one token (${statuses.join(', ')})`)
    t.ok(statuses.every((status) => status === 200 || status === 409), `round ${round}: the others 409 / ALREADY_EXISTS`)
  }
})

/** An RPC failure as the REST status of its code, for one list of both transports' answers. */
function rpcErrorStatus (error: unknown): number {
  return error instanceof Error && 'code' in error && error.code === Code.AlreadyExists ? 409 : 500
}

t.test('configuration on both transports', async (t) => {
  const alice = await signInPerson(s, 'config')
  t.same((await alice.rest('GET', '/api/rtc/config')).json(), { data: { appId, enabled: true, tokenTtlSeconds: 3600 } })
  t.same(plain(await alice.rpc(RtcService).getConfig({})), { appId, enabled: true, tokenTtlSeconds: 3600 })
  t.equal((await anonymousRest(s)('GET', '/api/rtc/config')).statusCode, 401, 'Required (DECISIONS §5)')
  t.equal((await anonymousRest(s)('POST', '/api/rtc/token', { channelName: 'c', uid: '1' })).statusCode, 401)
})

t.test('bad input: each field named, 400 / INVALID_ARGUMENT', async (t) => {
  const bob = await signInPerson(s, 'bob')
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['a 65-byte channel', { channelName: 'c'.repeat(65), uid: '1' }, 'channelName'],
    ['a 64-byte channel of 2-byte characters', { channelName: 'é'.repeat(32) + 'x', uid: '1' }, 'channelName'],
    ['an empty channel', { channelName: '', uid: '1' }, 'channelName'],
    ['a slash in the channel', { channelName: 'a/b', uid: '1' }, 'channelName'],
    ['a 1 MB channel', { channelName: 'c'.repeat(1_000_000), uid: '1' }, 'channelName'],
    ['uid 0', { channelName: 'c', uid: '0' }, 'uid'],
    ['uid 2^32', { channelName: 'c', uid: '4294967296' }, 'uid'],
    ['a 20-digit uid', { channelName: 'c', uid: '99999999999999999999' }, 'uid'],
    ['an empty uid', { channelName: 'c', uid: '' }, 'uid'],
    ['a 256-byte account', { channelName: 'c', uid: 'a'.repeat(256) }, 'uid'],
    ['a number for uid', { channelName: 'c', uid: 5 }, 'uid'],
    ['an unknown role', { channelName: 'c', uid: '1', role: 'ADMIN' }, 'role'],
    ['no channel', { uid: '1' }, 'channelName']
  ]
  for (const [label, body, field] of cases) {
    const res = await bob.rest('POST', '/api/rtc/token', body)
    t.equal(res.statusCode, 400, label)
    t.equal(res.json().details?.[0]?.field, field, `${label}: names ${field}`)
  }
  // The bounds themselves pass validation: then the channel and the account are what is refused.
  t.equal((await bob.rest('POST', '/api/rtc/token', { channelName: 'c'.repeat(64), uid: '1' })).statusCode, 404, 'a 64-byte channel is valid (and no room)')
  t.equal((await bob.rest('POST', '/api/rtc/token', { channelName: await roomOf(bob, false), uid: 'a'.repeat(255) })).statusCode, 403, 'a 255-byte account is valid (and not bob\'s id)')
  for (const [request, field] of [[{ channelName: 'c'.repeat(65), uid: '1' }, 'channelName'], [{ channelName: 'c', uid: '0' }, 'uid']] as const) {
    const error = await rpcError(bob.rpc(RtcService).generateToken(request))
    t.equal(error.code, Code.InvalidArgument)
    t.match(error.rawMessage, field)
  }
  t.equal((await rpcError(bob.rpc(RtcService).generateToken({ channelName: 'c', uid: '1', role: 9 as RtcRole }))).code, Code.InvalidArgument, 'an enum number outside RtcRole')
})

t.test('the token route is exempt from rate limits', async (t) => {
  const carol = await signInPerson(s, 'carol')
  const channel = await roomOf(carol, false)
  const answers = await Promise.all(Array.from({ length: 150 }, async (_, i) => await carol.rest('POST', '/api/rtc/token', { channelName: channel, uid: String(i + 1) })))
  t.ok(answers.every((res) => res.statusCode === 200), '150 tokens in a burst, beyond every tier')
  t.notOk('ratelimit-limit' in (answers[0]?.headers ?? {}), 'no rate-limit headers on an exempt route')
})

t.test('unconfigured: 503 / FAILED_PRECONDITION with a clear message; config says disabled', async (t) => {
  const bare = await startApp({ RTC_APP_ID: undefined, RTC_APP_CERTIFICATE: undefined })
  t.teardown(bare.close)
  const dave = await signInPerson(bare, 'dave')
  const res = await dave.rest('POST', '/api/rtc/token', { channelName: 'c', uid: '1' })
  t.equal(res.statusCode, 503)
  t.equal(res.json().error, 'ServiceUnavailable')
  t.match(res.json().message, /not configured/)
  const error = await rpcError(dave.rpc(RtcService).generateToken({ channelName: 'c', uid: '1' }))
  t.equal(error.code, Code.FailedPrecondition)
  t.match(error.rawMessage, /not configured/)
  t.same((await dave.rest('GET', '/api/rtc/config')).json(), { data: { appId: '', enabled: false, tokenTtlSeconds: 3600 } })
  t.equal((await dave.rest('POST', '/api/rtc/token', { channelName: '', uid: '1' })).statusCode, 400, 'bad input is still named first')
})

t.test('RTC_APP_ID and RTC_APP_CERTIFICATE must be Agora\'s 32 hexadecimal digits', async (t) => {
  for (const [env, name] of [[{ RTC_APP_ID: 'not-an-id', RTC_APP_CERTIFICATE: certificate }, 'RTC_APP_ID'], [{ RTC_APP_ID: appId, RTC_APP_CERTIFICATE: 'x'.repeat(32) }, 'RTC_APP_CERTIFICATE']] as const) {
    let thrown: unknown
    try {
      loadConfig({ DATA_DIR: temporaryDir('canvas-rtc-config-'), ...env })
    } catch (error) {
      thrown = error
    }
    t.ok(thrown instanceof ConfigError && thrown.variable === name, name)
  }
})
