// Office invitations end to end from the mailed link, on both transports: info without signing in,
// accept with the invited address only, single use, expiry, replacement, 20 parallel accepts making
// one membership; office events reaching members and nobody else, a removed member's last one; and
// what account deletion does to offices.
import t from 'tap'
import { Code } from '@connectrpc/connect'
import { AuthService } from '../src/gen/app/auth/v1/auth_pb.js'
import { OfficesService } from '../src/gen/app/offices/v1/offices_pb.js'
import { lastMailTo, movableClock, startApp, uniqueClientIp, uniqueEmail } from './helpers/app.js'
import { anonymousRest, plain, rpcError, signInPerson, type Person } from './helpers/people.js'
import { rpcClient } from './helpers/sign-in.js'
import { ofType, openStream, type SseStream } from './helpers/sse.js'

const clock = movableClock()
const s = await startApp({ SSE_HEARTBEAT_MS: '1000' }, { clock, rateLimit: { maxOverride: { strict: 1_000_000, write: 1_000_000, read: 1_000_000, standard: 1_000_000 } } })
t.teardown(s.close)
const anonymous = anonymousRest(s)
let slugs = 0
const uniqueSlug = (): string => `inv-${process.pid}-${++slugs}-${Math.random().toString(36).slice(2, 8)}`

async function officeOf (owner: Person): Promise<string> {
  return (await owner.rest('POST', '/api/offices', { name: 'Invites', slug: uniqueSlug() })).json().data.id as string
}

async function stream (t: { teardown: (fn: () => void) => void }, person: Person): Promise<SseStream> {
  const opened = await openStream(s.url, { cookie: person.cookie, headers: { 'x-forwarded-for': uniqueClientIp() } })
  t.teardown(() => { opened.close() })
  return opened
}

t.test('the invitation flow from the mailed link: info without signing in, accept with the invited address', async (t) => {
  const owner = await signInPerson(s, 'inv-owner')
  const officeId = await officeOf(owner)
  const email = uniqueEmail('Invitee').toUpperCase()
  const invited = await owner.rest('POST', `/api/offices/${officeId}/invites`, { email, role: 'admin' })
  t.equal(invited.statusCode, 201)
  const invite = invited.json().data
  t.match(invite, { officeId, email: email.toLowerCase(), role: 'admin', invitedBy: owner.userId })
  const mail = lastMailTo(s.config, email)
  t.match(mail.text, `http://app.test/invites/accept?token=${mail.token}`)
  t.ok(mail.token.length >= 22, 'the token carries at least 128 bits')

  const info = await anonymous('GET', `/api/invites/${mail.token}`)
  t.equal(info.statusCode, 200, 'anyone holding the link sees what it invites to')
  t.same(info.json().data, { officeId, officeName: 'Invites', officeSlug: info.json().data.officeSlug, inviterName: owner.email.split('@')[0], email: email.toLowerCase(), role: 'admin', expiresAt: invite.expiresAt })
  t.same(plain(await rpcClient(s, OfficesService).getInviteInfo({ token: mail.token })), info.json().data, 'the same over RPC, without a token')
  t.equal(new Date(invite.expiresAt).getTime() - new Date(invite.createdAt).getTime(), 7 * 24 * 3600_000, 'valid 7 days')

  const stranger = await signInPerson(s, 'stranger')
  const wrong = await stranger.rest('POST', '/api/invites/accept', { token: mail.token })
  t.equal(wrong.statusCode, 403, 'another signed-in address may not accept it')
  t.equal((await rpcError(stranger.rpc(OfficesService).acceptInvite({ token: mail.token }))).code, Code.PermissionDenied)
  t.equal((await anonymous('POST', '/api/invites/accept', { token: mail.token })).statusCode, 401)

  const invitee = await signInPerson(s, 'invitee', email.toLowerCase())
  const accepted = await invitee.rpc(OfficesService, { binary: true }).acceptInvite({ token: mail.token })
  t.match(accepted.member, { officeId, userId: invitee.userId, role: 'admin' })
  t.equal(accepted.office?.id, officeId)
  t.equal((await invitee.rest('GET', `/api/offices/${officeId}`)).statusCode, 200, 'a member now')

  const twice = await invitee.rest('POST', '/api/invites/accept', { token: mail.token })
  t.equal(twice.statusCode, 400)
  t.same(twice.json(), { error: 'InvalidToken', message: 'This invitation has already been used.' })
  t.equal((await anonymous('GET', `/api/invites/${mail.token}`)).statusCode, 400, 'a used link describes nothing')
  t.equal((await rpcError(rpcClient(s, OfficesService).getInviteInfo({ token: 'forged-token' }))).code, Code.InvalidArgument)
  t.equal((await anonymous('GET', '/api/invites/forged-token')).json().error, 'InvalidToken')
  t.equal((await owner.rest('POST', `/api/offices/${officeId}/invites`, { email, role: 'member' })).statusCode, 409, 'inviting a member is a conflict')
})

t.test('pending invitations: listed, replaced by a new one, cancelled, expired; an inviter leaving takes theirs along', async (t) => {
  const owner = await signInPerson(s, 'pending-owner')
  const officeId = await officeOf(owner)
  const email = uniqueEmail('pending')
  await owner.rest('POST', `/api/offices/${officeId}/invites`, { email, role: 'member' })
  const first = lastMailTo(s.config, email).token
  await owner.rest('POST', `/api/offices/${officeId}/invites`, { email, role: 'admin' })
  const second = lastMailTo(s.config, email).token
  t.equal((await anonymous('GET', `/api/invites/${first}`)).statusCode, 400, 'the replaced link stopped working')
  t.equal((await anonymous('GET', `/api/invites/${second}`)).json().data.role, 'admin')
  const pending = (await owner.rest('GET', `/api/offices/${officeId}/invites`)).json()
  t.equal(pending.pagination.total, 1, 'one pending invitation per address')
  const inviteId = pending.data[0].id as string
  t.equal((await owner.rest('DELETE', `/api/offices/${officeId}/invites/${inviteId}`)).statusCode, 204)
  t.equal((await anonymous('GET', `/api/invites/${second}`)).statusCode, 400, 'a cancelled link stops working')
  t.equal((await owner.rest('DELETE', `/api/offices/${officeId}/invites/${inviteId}`)).statusCode, 404)

  const later = uniqueEmail('later')
  await owner.rest('POST', `/api/offices/${officeId}/invites`, { email: later, role: 'member' })
  const expiring = lastMailTo(s.config, later).token
  clock.advance(7 * 24 * 3600_000 + 1)
  const expired = await anonymous('GET', `/api/invites/${expiring}`)
  t.same(expired.json(), { error: 'InvalidToken', message: 'This invitation has expired; ask for a new one.' })
  t.equal((await owner.rest('GET', `/api/offices/${officeId}/invites`)).json().pagination.total, 0, 'expired ones are not pending')

  // An admin's invitations go when the admin leaves.
  const adminEmail = uniqueEmail('admin')
  await owner.rest('POST', `/api/offices/${officeId}/invites`, { email: adminEmail, role: 'admin' })
  const adminToken = lastMailTo(s.config, adminEmail).token
  const admin = await signInPerson(s, 'admin', adminEmail)
  await admin.rest('POST', '/api/invites/accept', { token: adminToken })
  const byAdmin = uniqueEmail('by-admin')
  t.equal((await admin.rest('POST', `/api/offices/${officeId}/invites`, { email: byAdmin, role: 'member' })).statusCode, 201)
  const byAdminToken = lastMailTo(s.config, byAdmin).token
  t.equal((await admin.rest('DELETE', `/api/offices/${officeId}/members/${admin.userId}`)).statusCode, 204, 'the admin leaves')
  t.equal((await anonymous('GET', `/api/invites/${byAdminToken}`)).statusCode, 400, 'their pending invitation is cancelled')
})

t.test('20 parallel accepts of one invitation make exactly one membership', async (t) => {
  const owner = await signInPerson(s, 'parallel-owner')
  const officeId = await officeOf(owner)
  const email = uniqueEmail('parallel')
  await owner.rest('POST', `/api/offices/${officeId}/invites`, { email, role: 'member' })
  const { token } = lastMailTo(s.config, email)
  const invitee = await signInPerson(s, 'parallel', email)
  const answers = await Promise.all(Array.from({ length: 20 }, async (_, i) => i % 2 === 0
    ? (await invitee.rest('POST', '/api/invites/accept', { token })).statusCode
    : await invitee.rpc(OfficesService).acceptInvite({ token }).then(() => 200, async (error: unknown) => (await rpcError(Promise.reject(error))).code === Code.InvalidArgument ? 400 : 500)))
  t.equal(answers.filter((s) => s === 200).length, 1, 'one accept wins')
  t.equal(answers.filter((s) => s === 400).length, 19, 'the others are told the link is used')
  const members = (await owner.rest('GET', `/api/offices/${officeId}/members`)).json()
  t.equal(members.pagination.total, 2)
  t.equal(members.data.filter((m: { userId: string }) => m.userId === invitee.userId).length, 1)
})

t.test('office events reach the members and nobody else; a removed member gets their own member-left, then nothing', async (t) => {
  const owner = await signInPerson(s, 'events-owner')
  const memberEmail = uniqueEmail('events-member')
  const member = await signInPerson(s, 'events-member', memberEmail)
  const outsider = await signInPerson(s, 'events-outsider')
  const ownerStream = await stream(t, owner)
  const memberStream = await stream(t, member)
  const outsiderStream = await stream(t, outsider)

  const officeId = await officeOf(owner)
  t.match((await ownerStream.waitFor(ofType('office:created'))).json.payload, { id: officeId, name: 'Invites' })
  await owner.rest('POST', `/api/offices/${officeId}/invites`, { email: memberEmail, role: 'member' })
  await member.rest('POST', '/api/invites/accept', { token: lastMailTo(s.config, memberEmail).token })
  const joined = await ownerStream.waitFor(ofType('office:member-joined'))
  t.same(joined.json.payload, { officeId, userId: member.userId, role: 'member' })
  t.same((await memberStream.waitFor(ofType('office:member-joined'))).json.payload, joined.json.payload, 'the new member hears it too')

  await owner.rpc(OfficesService).updateOffice({ officeId, name: 'Renamed' })
  t.equal((await memberStream.waitFor(ofType('office:updated'))).json.payload?.name, 'Renamed')

  await owner.rest('DELETE', `/api/offices/${officeId}/members/${member.userId}`)
  t.same((await memberStream.waitFor(ofType('office:member-left'))).json.payload, { officeId, userId: member.userId }, 'the removed member hears of their own removal')
  t.same((await ownerStream.waitFor(ofType('office:member-left'))).json.payload, { officeId, userId: member.userId })
  await owner.rest('PATCH', `/api/offices/${officeId}`, { name: 'After removal' })
  await ownerStream.waitFor((m) => ofType('office:updated')(m) && m.json.payload?.name === 'After removal')
  // A marker the member does see, published after the rename: everything before it would have arrived first.
  await member.rest('POST', '/api/offices', { name: 'Marker', slug: uniqueSlug() })
  await memberStream.waitFor((m) => ofType('office:created')(m) && m.json.payload?.name === 'Marker')
  t.notOk(memberStream.events().some((m) => m.json.payload?.name === 'After removal'), 'then nothing more of that office')

  await owner.rest('DELETE', `/api/offices/${officeId}`)
  t.same((await ownerStream.waitFor(ofType('office:deleted'))).json.payload, { id: officeId })
  await outsider.rest('POST', '/api/offices', { name: 'Outsider marker', slug: uniqueSlug() })
  await outsiderStream.waitFor((m) => ofType('office:created')(m) && m.json.payload?.name === 'Outsider marker')
  t.same(outsiderStream.events().filter((m) => String(m.json.type).startsWith('office:') && m.json.payload?.name !== 'Outsider marker'), [], 'the outsider heard nothing of it')
})

t.test('account deletion: offices the user alone owns go; co-owned ones stay; memberships and invitations go', async (t) => {
  const leaver = await signInPerson(s, 'deleted')
  const coOwner = await signInPerson(s, 'co-owner')
  const memberEmail = uniqueEmail('witness')
  const witness = await signInPerson(s, 'witness', memberEmail)
  const alone = await officeOf(leaver)
  const shared = await officeOf(leaver)
  for (const [officeId, email, role] of [[alone, memberEmail, 'member'], [shared, coOwner.email, 'owner']] as const) {
    await leaver.rest('POST', `/api/offices/${officeId}/invites`, { email, role })
    const token = lastMailTo(s.config, email).token
    await (email === memberEmail ? witness : coOwner).rest('POST', '/api/invites/accept', { token })
  }
  const pendingEmail = uniqueEmail('never-accepted')
  await leaver.rest('POST', `/api/offices/${shared}/invites`, { email: pendingEmail, role: 'member' })
  const pendingToken = lastMailTo(s.config, pendingEmail).token
  const witnessStream = await stream(t, witness)
  const coOwnerStream = await stream(t, coOwner)

  const auth = rpcClient(s, AuthService, { token: leaver.token, clientIp: uniqueClientIp() })
  await auth.requestDeletion({})
  await rpcClient(s, AuthService).confirmDeletion({ token: lastMailTo(s.config, leaver.email).token })

  t.same((await witnessStream.waitFor(ofType('office:deleted'))).json.payload, { id: alone }, 'the members of an office the user alone owned hear it go')
  t.equal((await witness.rest('GET', `/api/offices/${alone}`)).statusCode, 404)
  t.same((await coOwnerStream.waitFor(ofType('office:member-left'))).json.payload, { officeId: shared, userId: leaver.userId })
  const members = (await coOwner.rest('GET', `/api/offices/${shared}/members`)).json().data
  t.same(members.map((m: { userId: string, role: string }) => [m.userId, m.role]), [[coOwner.userId, 'owner']], 'the co-owned office stays, without them')
  t.equal((await anonymous('GET', `/api/invites/${pendingToken}`)).statusCode, 400, 'their pending invitations went with them')
})
