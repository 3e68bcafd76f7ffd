// Offices, what the second checkpoint found (issue 26 item 6, DECISIONS §16): account deletion takes
// the office lock (never an office without an owner), a demoted inviter's invitations for roles they
// may no longer grant are cancelled, invitations are in the strict tier and one address gets at most
// 3 a day from one office, office names follow the display-name rules, and an accept racing an
// office delete never deadlocks. On both transports; the races prove something on Postgres only
// (run with DATABASE_URL), where transactions really run at once.
import t from 'tap'
import { Code } from '@connectrpc/connect'
import { OfficesService } from '../src/gen/app/offices/v1/offices_pb.js'
import { lastMailTo, movableClock, startApp, uniqueClientIp, uniqueEmail } from './helpers/app.js'
import { rpcError, signInPerson, type Person } from './helpers/people.js'

const unlimited = 1_000_000_000
const clock = movableClock()
// The strict tier is left as it is: the tier test below counts in it.
const s = await startApp({}, { clock, rateLimit: { maxOverride: { write: unlimited, read: unlimited, standard: unlimited } } })
t.teardown(s.close)

let slugs = 0
const uniqueSlug = (label: string): string => `${label}-${process.pid}-${++slugs}-${Math.random().toString(36).slice(2, 8)}`

async function newOffice (owner: Person, label: string): Promise<string> {
  const res = await owner.rest('POST', '/api/offices', { name: `${label} office`, slug: uniqueSlug(label) })
  if (res.statusCode !== 201) throw new Error(`create: ${res.statusCode} ${res.body}`)
  return res.json().data.id as string
}

/** Invites a new address and signs its owner in; the invitation is accepted unless `accept` is false. */
async function invite (inviter: Person, officeId: string, role: 'owner' | 'admin' | 'member', label: string): Promise<{ person: Person, token: string }> {
  const email = uniqueEmail(label)
  const res = await inviter.rest('POST', `/api/offices/${officeId}/invites`, { email, role })
  if (res.statusCode !== 201) throw new Error(`invite: ${res.statusCode} ${res.body}`)
  const { token } = lastMailTo(s.config, email)
  return { person: await signInPerson(s, label, email), token }
}

async function join (inviter: Person, officeId: string, role: 'owner' | 'admin' | 'member', label: string): Promise<Person> {
  const { person, token } = await invite(inviter, officeId, role, label)
  const accepted = await person.rest('POST', '/api/invites/accept', { token })
  if (accepted.statusCode !== 200) throw new Error(`accept: ${accepted.statusCode} ${accepted.body}`)
  return person
}

/** Whether the office still exists, and its owners. */
async function ownersOf (officeId: string): Promise<{ exists: boolean, owners: number, members: number }> {
  const { db } = s.app.deps
  const exists = await db.selectFrom('offices').select('id').where('id', '=', officeId).executeTakeFirst() !== undefined
  const rows = await db.selectFrom('office_members').select('role').where('office_id', '=', officeId).execute()
  return { exists, owners: rows.filter((r) => r.role === 'owner').length, members: rows.length }
}

/** The confirmation token of a requested account deletion. */
async function deletionToken (who: Person): Promise<string> {
  const requested = await who.rest('POST', '/api/auth/request-deletion')
  if (requested.statusCode !== 200) throw new Error(`request-deletion: ${requested.statusCode}`)
  return lastMailTo(s.config, who.email).token
}

/** From an address of its own: confirming is public, counted per address in the strict tier. */
const confirmDeletion = async (token: string): Promise<number> =>
  (await s.app.inject({ method: 'POST', url: '/api/auth/confirm-deletion', payload: { token }, headers: { 'x-forwarded-for': uniqueClientIp() } })).statusCode

/** The public invitation info's status, from an address of its own (strict tier, per address). */
const inviteInfo = async (token: string): Promise<number> =>
  (await s.app.inject({ method: 'GET', url: `/api/invites/${token}`, headers: { 'x-forwarded-for': uniqueClientIp() } })).statusCode

t.test('two owners deleting their accounts at once never leave an office without an owner', async (t) => {
  for (let trial = 0; trial < 6; trial++) {
    const a = await signInPerson(s, 'del-a')
    const officeId = await newOffice(a, 'del')
    const b = await join(a, officeId, 'owner', 'del-b')
    await join(a, officeId, 'member', 'del-m')
    const [ta, tb] = [await deletionToken(a), await deletionToken(b)]
    const answers = await Promise.all([confirmDeletion(ta), confirmDeletion(tb)])
    t.same(answers, [204, 204], `trial ${trial}: both deletions complete`)
    const after = await ownersOf(officeId)
    // The one that went second was the last owner: the office went with it.
    t.ok(!after.exists || after.owners >= 1, `trial ${trial}: the office is gone or has an owner (${JSON.stringify(after)})`)
    t.notOk(after.exists, `trial ${trial}: the second deletion found itself the last owner`)
  }
})

t.test('an owner deleting their account while the other owner leaves: the office keeps an owner or goes', async (t) => {
  for (let trial = 0; trial < 6; trial++) {
    const a = await signInPerson(s, 'leave-a')
    const officeId = await newOffice(a, 'leave')
    const b = await join(a, officeId, 'owner', 'leave-b')
    await join(a, officeId, 'member', 'leave-m')
    const token = await deletionToken(a)
    const [deleted, left] = await Promise.all([
      confirmDeletion(token),
      b.rest('DELETE', `/api/offices/${officeId}/members/${b.userId}`).then((r) => r.statusCode)
    ])
    t.equal(deleted, 204)
    t.ok(left === 204 || left === 409 || left === 404, `trial ${trial}: leaving answers ${left}`)
    const after = await ownersOf(officeId)
    t.ok(!after.exists || after.owners >= 1, `trial ${trial}: never a member left without an owner (${JSON.stringify(after)}, leave ${left})`)
  }
})

t.test('demoting an inviter cancels their pending invitations for roles they may no longer grant', async (t) => {
  const owner = await signInPerson(s, 'demote-owner')
  const officeId = await newOffice(owner, 'demote')
  const inviter = await join(owner, officeId, 'owner', 'demote-inviter')
  const asAdmin = await invite(inviter, officeId, 'admin', 'demote-to-admin')
  const asMember = await invite(inviter, officeId, 'member', 'demote-to-member')
  const asOwner = await invite(inviter, officeId, 'owner', 'demote-to-owner')
  const pending = async (): Promise<string[]> => ((await owner.rest('GET', `/api/offices/${officeId}/invites`)).json().data as Array<{ role: string }>).map((i) => i.role).sort()
  t.same(await pending(), ['admin', 'member', 'owner'])

  // Owner → admin (REST): an admin grants only membership; the owner and admin invitations go.
  t.equal((await owner.rest('PATCH', `/api/offices/${officeId}/members/${inviter.userId}`, { role: 'admin' })).statusCode, 200)
  t.same(await pending(), ['member'])
  for (const gone of [asAdmin, asOwner]) {
    t.equal(await inviteInfo(gone.token), 400, 'its link no longer works')
    t.equal((await gone.person.rest('POST', '/api/invites/accept', { token: gone.token })).statusCode, 400)
  }
  t.equal(await inviteInfo(asMember.token), 200, 'the member invitation stays')

  // Admin → member (RPC): a member invites nobody; the last one goes too.
  await owner.rpc(OfficesService).updateMemberRole({ officeId, userId: inviter.userId, role: 'member' })
  t.same(await pending(), [])
  t.equal((await rpcError(asMember.person.rpc(OfficesService).getInviteInfo({ token: asMember.token }))).code, Code.InvalidArgument)

  // A promotion cancels nothing.
  const other = await join(owner, officeId, 'admin', 'demote-admin2')
  await invite(other, officeId, 'member', 'demote-kept')
  await owner.rpc(OfficesService).updateMemberRole({ officeId, userId: other.userId, role: 'owner' })
  t.same(await pending(), ['member'])
})

t.test('one address gets at most 3 invitations a day from one office: then 429 with Retry-After (RPC RESOURCE_EXHAUSTED)', async (t) => {
  const owner = await signInPerson(s, 'daily-owner')
  const officeId = await newOffice(owner, 'daily')
  const email = uniqueEmail('daily-invitee')
  for (let i = 0; i < 3; i++) {
    t.equal((await owner.rest('POST', `/api/offices/${officeId}/invites`, { email, role: 'member' })).statusCode, 201, `invitation ${i + 1} (each replaces the pending one)`)
  }
  const fourth = await owner.rest('POST', `/api/offices/${officeId}/invites`, { email: email.toUpperCase(), role: 'member' })
  t.equal(fourth.statusCode, 429, 'the same address, whatever its case')
  t.equal(fourth.json().error, 'Rate limit exceeded')
  t.match(fourth.json().message, /3 invitations from this office within a day/)
  const retryAfter = Number(fourth.headers['retry-after'])
  t.ok(retryAfter > 86_000 && retryAfter <= 86_400, `Retry-After ${retryAfter} s: when the first of the three is a day old`)
  t.equal(fourth.json().retryAfter, retryAfter)
  const viaRpc = await rpcError(owner.rpc(OfficesService).inviteToOffice({ officeId, email, role: 'member' }))
  t.equal(viaRpc.code, Code.ResourceExhausted)
  t.equal(lastMailTo(s.config, email).subject, 'You are invited to daily office')

  t.equal((await owner.rest('POST', `/api/offices/${officeId}/invites`, { email: uniqueEmail('daily-other'), role: 'member' })).statusCode, 201, 'another address: fine')
  const otherOffice = await newOffice(owner, 'daily2')
  t.equal((await owner.rest('POST', `/api/offices/${otherOffice}/invites`, { email, role: 'member' })).statusCode, 201, 'another office: fine')

  clock.advance(24 * 3600_000 + 1_000)
  t.equal((await owner.rest('POST', `/api/offices/${officeId}/invites`, { email, role: 'member' })).statusCode, 201, 'a day later: allowed again')
})

t.test('inviting counts in the strict tier: the 11th invitation of a minute is 429 before anything is sent', async (t) => {
  const owner = await signInPerson(s, 'tier-owner')
  const officeId = await newOffice(owner, 'tier')
  const statuses: number[] = []
  let last
  for (let i = 0; i < 11; i++) {
    last = await owner.rest('POST', `/api/offices/${officeId}/invites`, { email: uniqueEmail('tier'), role: 'member' })
    statuses.push(last.statusCode)
  }
  t.same(statuses, [...Array(10).fill(201), 429])
  t.equal(last?.headers['ratelimit-limit'], '10', 'the strict tier\'s limit')
  t.equal(last?.headers['ratelimit-remaining'], '0')
})

t.test('office names follow the display-name rules on both transports', async (t) => {
  const owner = await signInPerson(s, 'names')
  const nfc = await owner.rest('POST', '/api/offices', { name: '  Cafe\u0301 Team  ', slug: uniqueSlug('names') })
  t.equal(nfc.statusCode, 201)
  t.equal(nfc.json().data.name, 'Caf\u00e9 Team', 'NFC and trimmed')
  const officeId = nfc.json().data.id as string
  for (const name of ['\u200B\u2060', '\u3164', '\u{E0041}\u{E0042}', 'Evil\u202Eoffice', 'Bell\u0007']) {
    const created = await owner.rest('POST', '/api/offices', { name, slug: uniqueSlug('bad') })
    t.equal(created.statusCode, 400, JSON.stringify(name))
    t.equal(created.json().details?.[0]?.field, 'name')
    const updated = await owner.rest('PATCH', `/api/offices/${officeId}`, { name })
    t.equal(updated.statusCode, 400, `update ${JSON.stringify(name)}`)
    const viaRpc = await rpcError(owner.rpc(OfficesService, { binary: true }).createOffice({ name, slug: uniqueSlug('bad') }))
    t.equal(viaRpc.code, Code.InvalidArgument)
    t.match(viaRpc.rawMessage, /name/)
  }
  const renamed = await owner.rpc(OfficesService).updateOffice({ officeId, name: ' \u00c5ngstr\u00f6m ' })
  t.equal(renamed.office?.name, '\u00c5ngstr\u00f6m')
})

t.test('accept racing an office delete never deadlocks: one order or the other, never a 500', async (t) => {
  for (let trial = 0; trial < 12; trial++) {
    const owner = await signInPerson(s, 'race-owner')
    const officeId = await newOffice(owner, 'race')
    const { person, token } = await invite(owner, officeId, 'member', 'race-invitee')
    const [accepted, deleted] = await Promise.all([
      person.rest('POST', '/api/invites/accept', { token }),
      owner.rest('DELETE', `/api/offices/${officeId}`)
    ])
    t.equal(deleted.statusCode, 204, `trial ${trial}: the delete completes`)
    t.ok(accepted.statusCode === 200 || accepted.statusCode === 400, `trial ${trial}: accept ${accepted.statusCode} ${accepted.statusCode === 400 ? String(accepted.json().error) : ''}`)
    t.notOk((await ownersOf(officeId)).exists)
  }
})
