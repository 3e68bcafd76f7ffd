// Office invitations reach the invitee's inbox (issue 38 item 3, DECISIONS §11, §17): inviting an
// address that has an account — over REST and over RPC InviteToOffice — adds an `office-invite`
// message (office name and inviter's display name in title and body, a link to accept that names the
// invitation by id, never its token) and `message:created` on the invitee's streams; the link's id
// accepts the invitation for the invitee only, on both transports; accepting, cancelling or replacing
// the invitation leaves the message readable. An address without an account gets mail only, and a
// failed mail takes the message back with the invitation.
import t from 'tap'
import { Code } from '@connectrpc/connect'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/database.js'
import { OfficesService } from '../src/gen/app/offices/v1/offices_pb.js'
import { lastMailTo, startApp, testEnv, uniqueClientIp, uniqueEmail } from './helpers/app.js'
import { startFailingSmtp } from './helpers/fake-smtp.js'
import { rpcError, signInPerson, type Person } from './helpers/people.js'
import { ofType, openStream, type SseStream } from './helpers/sse.js'

// Shared with a second instance whose mail fails (the last test).
const database = await openDatabase(loadConfig(testEnv()))
t.teardown(async () => { await database.close() })
const unlimited = { database, rateLimit: { maxOverride: { strict: 1_000_000, write: 1_000_000, read: 1_000_000, standard: 1_000_000 } } }
const s = await startApp({ SSE_HEARTBEAT_MS: '1000' }, unlimited)
t.teardown(s.close)

let offices = 0
async function officeOf (owner: Person, name: string): Promise<string> {
  const res = await owner.rest('POST', '/api/offices', { name, slug: `inbox-${process.pid}-${++offices}-${Math.random().toString(36).slice(2, 8)}` })
  return res.json().data.id as string
}

async function stream (t: { teardown: (fn: () => void) => void }, person: Person): Promise<SseStream> {
  const opened = await openStream(s.url, { cookie: person.cookie, headers: { 'x-forwarded-for': uniqueClientIp() } })
  t.teardown(() => { opened.close() })
  return opened
}

interface InboxMessage { id: string, kind: string, title: string, body: string, link?: string, readAt: string | null }

async function inboxOf (person: Person): Promise<InboxMessage[]> {
  const res = await person.rest('GET', '/api/messages?limit=100')
  if (res.statusCode !== 200) throw new Error(`messages: ${res.statusCode} ${res.body}`)
  return res.json().data
}

const inviteIdOf = (message: InboxMessage): string => new URL(message.link ?? '').searchParams.get('inviteId') ?? ''

for (const transport of ['REST', 'RPC'] as const) {
  t.test(`${transport}: inviting an existing user writes an office-invite message and message:created; its link accepts`, async (t) => {
    const owner = await signInPerson(s, 'inbox-owner')
    const invitee = await signInPerson(s, 'inbox-invitee')
    const officeName = `Acme ${transport}`
    const officeId = await officeOf(owner, officeName)
    const inviteeStream = await stream(t, invitee)

    const invite = transport === 'REST'
      ? (await owner.rest('POST', `/api/offices/${officeId}/invites`, { email: invitee.email, role: 'admin' })).json().data
      : (await owner.rpc(OfficesService).inviteToOffice({ officeId, email: invitee.email, role: 'admin' })).invite
    const inviterName = owner.email.split('@')[0]!

    const event = await inviteeStream.waitFor(ofType('message:created'))
    const [message] = await inboxOf(invitee)
    t.ok(message !== undefined, 'in the inbox')
    t.match(message, { kind: 'office-invite', readAt: null })
    t.same(event.json.payload, message, 'the event carries the message')
    t.ok(`${message!.title} ${message!.body}`.includes(officeName), 'names the office')
    t.ok(`${message!.title} ${message!.body}`.includes(inviterName), 'names the inviter')
    t.equal(message!.link, `http://app.test/invites/accept?inviteId=${invite?.id as string}`, 'links to accepting it by id')
    const { token } = lastMailTo(s.config, invitee.email)
    t.notOk(JSON.stringify(message).includes(token), 'the message never holds the token')

    const stranger = await signInPerson(s, 'inbox-stranger')
    const inviteId = inviteIdOf(message!)
    t.equal((await stranger.rest('POST', '/api/invites/accept', { inviteId })).statusCode, 403, 'another user may not accept it by id')
    t.equal((await rpcError(stranger.rpc(OfficesService).acceptInvite({ inviteId }))).code, Code.PermissionDenied)
    t.equal((await invitee.rest('POST', '/api/invites/accept', { inviteId, token })).statusCode, 400, 'token and id together are refused')

    if (transport === 'REST') {
      const accepted = await invitee.rest('POST', '/api/invites/accept', { inviteId })
      t.equal(accepted.statusCode, 200, accepted.body)
    } else {
      const accepted = await invitee.rpc(OfficesService).acceptInvite({ inviteId })
      t.match(accepted.member, { officeId, userId: invitee.userId, role: 'admin' })
    }
    t.equal((await invitee.rest('GET', `/api/offices/${officeId}`)).statusCode, 200, 'a member now')
    const twice = await invitee.rest('POST', '/api/invites/accept', { inviteId })
    t.equal(twice.json().error, 'InvalidToken', 'used once')
    t.equal((await invitee.rest('POST', '/api/invites/accept', { token })).json().error, 'InvalidToken', 'the mailed token is used up too')

    const after = await inboxOf(invitee)
    t.same(after.map((m) => m.id), [message!.id], 'accepted: the message is still there')
    t.equal((await invitee.rest('POST', `/api/messages/${message!.id}/read`)).statusCode, 200, 'and can be marked read')
  })
}

t.test('cancelled or replaced: the message stays readable, its link no longer accepts', async (t) => {
  const owner = await signInPerson(s, 'inbox-owner')
  const invitee = await signInPerson(s, 'inbox-invitee')
  const officeId = await officeOf(owner, 'Cancelled Co')
  const first = (await owner.rest('POST', `/api/offices/${officeId}/invites`, { email: invitee.email, role: 'member' })).json().data
  const second = (await owner.rest('POST', `/api/offices/${officeId}/invites`, { email: invitee.email, role: 'member' })).json().data
  const messages = await inboxOf(invitee)
  t.same(messages.map(inviteIdOf), [second.id, first.id], 'one message per invitation, newest first')
  const replaced = await invitee.rest('POST', '/api/invites/accept', { inviteId: first.id })
  t.equal(replaced.json().error, 'InvalidToken', 'a replaced invitation is not valid')

  t.equal((await owner.rest('DELETE', `/api/offices/${officeId}/invites/${second.id as string}`)).statusCode, 204)
  t.same((await inboxOf(invitee)).map((m) => m.id), messages.map((m) => m.id), 'cancelled: both messages still there')
  const cancelled = await invitee.rest('POST', '/api/invites/accept', { inviteId: second.id })
  t.equal(cancelled.statusCode, 400)
  t.equal(cancelled.json().error, 'InvalidToken')
  t.equal((await invitee.rest('GET', `/api/offices/${officeId}`)).statusCode, 404, 'not a member')
  t.equal((await invitee.rest('POST', '/api/invites/accept', { inviteId: 'invite_forged' })).json().error, 'InvalidToken', 'an unknown id')
  t.equal((await invitee.rest('POST', '/api/invites/accept', {})).json().details[0].field, 'token', 'neither token nor id: 400 naming token')
})

t.test('an address without an account gets the mail and no message; a failed mail takes the message back', async (t) => {
  const owner = await signInPerson(s, 'inbox-owner')
  const officeId = await officeOf(owner, 'Mail Only')
  const email = uniqueEmail('no-account')
  t.equal((await owner.rest('POST', `/api/offices/${officeId}/invites`, { email, role: 'member' })).statusCode, 201)
  t.match(lastMailTo(s.config, email).text, /invites\/accept\?token=/, 'the mail went out')
  const later = await signInPerson(s, 'no-account', email)
  t.same(await inboxOf(later), [], 'an account made later finds no message: there was nobody to write to')

  const smtp = await startFailingSmtp()
  t.teardown(smtp.close)
  const failing = await startApp({ SMTP_URL: smtp.url }, unlimited)
  t.teardown(failing.close)
  const invitee = await signInPerson(s, 'inbox-invitee')
  const refused = await failing.app.inject({ method: 'POST', url: `/api/offices/${officeId}/invites`, cookies: { app_session: owner.cookie }, payload: { email: invitee.email, role: 'member' } })
  t.equal(refused.statusCode, 503, 'the mail could not be sent')
  t.equal(smtp.received.length, 1, 'it was tried')
  t.same(await inboxOf(invitee), [], 'the message went with the invitation')
})
