// Offices (issue 20): every operation on both transports with the same shapes, bad input, and the
// role × operation matrix — owner, admin, member, non-member, anonymous — with the status (REST) and
// code (RPC) each cell must answer.
import t from 'tap'
import { Code } from '@connectrpc/connect'
import { OfficesService } from '../src/gen/app/offices/v1/offices_pb.js'
import { lastMailTo, startApp, uniqueEmail } from './helpers/app.js'
import { anonymousRest, plain, rpcError, signInPerson, type Person } from './helpers/people.js'
import { rpcClient } from './helpers/sign-in.js'

const unlimited = 1_000_000_000
const s = await startApp({}, { rateLimit: { maxOverride: { strict: unlimited, write: unlimited, read: unlimited, standard: unlimited } } })
t.teardown(s.close)
const anonymous = anonymousRest(s)

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/
let slugs = 0
const uniqueSlug = (label: string): string => `${label}-${process.pid}-${++slugs}-${Math.random().toString(36).slice(2, 8)}`

/** An office with one person in each role, joined through real invitations. */
async function staffedOffice (label: string): Promise<{ officeId: string, owner: Person, admin: Person, member: Person, outsider: Person }> {
  const owner = await signInPerson(s, `${label}-owner`)
  const officeId = (await owner.rest('POST', '/api/offices', { name: `${label} office`, slug: uniqueSlug(label) })).json().data.id as string
  const join = async (role: 'admin' | 'member'): Promise<Person> => {
    const email = uniqueEmail(`${label}-${role}`)
    const invited = await owner.rest('POST', `/api/offices/${officeId}/invites`, { email, role })
    if (invited.statusCode !== 201) throw new Error(`invite: ${invited.statusCode} ${invited.body}`)
    const { token } = lastMailTo(s.config, email)
    const person = await signInPerson(s, role, email)
    const accepted = await person.rest('POST', '/api/invites/accept', { token })
    if (accepted.statusCode !== 200) throw new Error(`accept: ${accepted.statusCode} ${accepted.body}`)
    return person
  }
  return { officeId, owner, admin: await join('admin'), member: await join('member'), outsider: await signInPerson(s, `${label}-outsider`) }
}

t.test('create, read, update, list and delete on both transports, with the same shapes', async (t) => {
  const alice = await signInPerson(s, 'alice')
  const slug = uniqueSlug('studio')
  const created = await alice.rest('POST', '/api/offices', { name: 'Studio', slug, description: 'Where we draw', isPublic: true })
  t.equal(created.statusCode, 201)
  const office = created.json().data
  t.same(Object.keys(office).sort(), ['createdAt', 'createdBy', 'description', 'id', 'isPublic', 'name', 'slug', 'updatedAt'])
  t.match(office, { name: 'Studio', slug, description: 'Where we draw', isPublic: true, createdBy: alice.userId, createdAt: ISO_MS, updatedAt: ISO_MS })

  for (const binary of [false, true]) {
    const viaRpc = await alice.rpc(OfficesService, { binary }).getOffice({ officeId: office.id })
    t.same(plain(viaRpc.office), office, `RPC ${binary ? 'binary' : 'JSON'} GetOffice answers the REST shape`)
  }
  const updated = await alice.rpc(OfficesService).updateOffice({ officeId: office.id, name: 'Studio B', isPublic: false })
  t.match(updated.office, { name: 'Studio B', slug, isPublic: false, description: 'Where we draw' })
  t.match((await alice.rest('PATCH', `/api/offices/${office.id}`, { description: '' })).json().data, { name: 'Studio B', description: '' })

  const listed = (await alice.rest('GET', '/api/offices?limit=100')).json()
  t.ok(listed.data.some((o: { id: string }) => o.id === office.id), 'REST lists the caller\'s offices')
  t.match(listed.pagination, { page: 1, limit: 100 })
  const rpcListed = await alice.rpc(OfficesService).listOffices({ limit: 100 })
  t.ok(rpcListed.offices.some((o) => o.id === office.id))

  const members = await alice.rpc(OfficesService).listMembers({ officeId: office.id })
  t.same(plain(members.members), [{ officeId: office.id, userId: alice.userId, role: 'owner', joinedAt: members.members[0]?.joinedAt, user: { id: alice.userId, displayName: alice.email.split('@')[0], avatarUrl: '' } }])
  t.same((await alice.rest('GET', `/api/offices/${office.id}/members`)).json(), { data: plain(members.members), pagination: { page: 1, limit: 20, total: 1, totalPages: 1 } })

  t.same(await alice.rpc(OfficesService).deleteOffice({ officeId: office.id }), { $typeName: 'app.offices.v1.DeleteOfficeResponse' })
  t.equal((await alice.rest('GET', `/api/offices/${office.id}`)).statusCode, 404, 'gone')
})

t.test('public offices: listed to everyone (anonymous RPC included; REST needs a session), readable by anyone signed in; members stay private', async (t) => {
  const owner = await signInPerson(s, 'public-owner')
  const publicOffice = (await owner.rest('POST', '/api/offices', { name: 'Open', slug: uniqueSlug('open'), isPublic: true })).json().data
  const privateOffice = (await owner.rest('POST', '/api/offices', { name: 'Closed', slug: uniqueSlug('closed') })).json().data
  const anonRpc = (await rpcClient(s, OfficesService).listOffices({ limit: 100 })).offices
  t.ok(anonRpc.every((o) => o.isPublic), 'anonymous RPC: public offices only')
  t.ok(anonRpc.some((o) => o.id === publicOffice.id))
  // Optional is the RPC gateway's class (DECISIONS §16): on REST the list needs the session.
  for (const url of ['/api/offices?limit=100', '/api/offices?scope=public']) {
    const anonRest = await anonymous('GET', url)
    t.equal(anonRest.statusCode, 401, `REST ${url} without a session`)
    t.ok(Number(anonRest.headers['ratelimit-limit']) > 0, 'with the rate-limit headers')
  }
  const stranger = await signInPerson(s, 'stranger')
  t.equal((await stranger.rest('GET', `/api/offices/${publicOffice.id}`)).statusCode, 200)
  t.equal((await stranger.rest('GET', `/api/offices/${publicOffice.id}/members`)).statusCode, 404)
  t.equal((await stranger.rest('GET', `/api/offices/${privateOffice.id}`)).statusCode, 404)
  const scoped = (await stranger.rest('GET', '/api/offices?scope=public&limit=100')).json().data.map((o: { id: string }) => o.id)
  t.ok(scoped.includes(publicOffice.id) && !scoped.includes(privateOffice.id))
  t.same((await stranger.rest('GET', '/api/offices')).json().data, [], 'without scope: only the stranger\'s own (none)')
})

t.test('bad input: validation errors naming the field on both transports; a taken slug is a conflict', async (t) => {
  const bob = await signInPerson(s, 'bob')
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ name: 'x', slug: '-starts' }, 'slug'],
    [{ name: 'x', slug: 'ends-' }, 'slug'],
    [{ name: 'x', slug: 'UPPER' }, 'slug'],
    [{ name: 'x', slug: 'ab' }, 'slug'],
    [{ name: 'x', slug: 'a'.repeat(49) }, 'slug'],
    [{ name: 'x', slug: 'a_b_c' }, 'slug'],
    [{ name: '', slug: 'fine-slug' }, 'name'],
    [{ name: 'x'.repeat(101), slug: 'fine-slug' }, 'name'],
    [{ name: 'x', slug: 'fine-slug', description: 'd'.repeat(1001) }, 'description'],
    [{ name: 'x', slug: 'fine-slug', isPublic: 'yes' }, 'isPublic'],
    [{ name: 'x', slug: 'x'.repeat(1_000_000) }, 'slug']
  ]
  for (const [body, field] of cases) {
    const res = await bob.rest('POST', '/api/offices', body)
    t.equal(res.statusCode, 400, JSON.stringify(body).slice(0, 60))
    t.ok(res.json().details.some((d: { field: string }) => d.field === field), `names ${field}`)
    if (field === 'isPublic') continue // a protobuf bool cannot carry "yes"
    const error = await rpcError(bob.rpc(OfficesService).createOffice({ name: String(body.name), slug: String(body.slug), description: typeof body.description === 'string' ? body.description : '' }))
    t.equal(error.code, Code.InvalidArgument, `RPC ${field}`)
  }
  const slug = uniqueSlug('taken')
  t.equal((await bob.rest('POST', '/api/offices', { name: 'First', slug })).statusCode, 201)
  const again = await bob.rest('POST', '/api/offices', { name: 'Second', slug })
  t.equal(again.statusCode, 409)
  t.equal(again.json().error, 'Conflict')
  t.equal((await rpcError(bob.rpc(OfficesService).createOffice({ name: 'Third', slug }))).code, Code.AlreadyExists)
  const other = (await bob.rest('POST', '/api/offices', { name: 'Other', slug: uniqueSlug('other') })).json().data.id as string
  t.equal((await bob.rest('PATCH', `/api/offices/${other}`, { slug })).statusCode, 409, 'renaming onto a taken slug too')
  t.equal((await bob.rest('PATCH', `/api/offices/${other}`, {})).statusCode, 400, 'an empty update')

  const { officeId, owner } = await staffedOffice('bad-role')
  const badRole = await owner.rest('POST', `/api/offices/${officeId}/invites`, { email: uniqueEmail(), role: 'king' })
  t.equal(badRole.statusCode, 400)
  t.same(badRole.json().details, [{ field: 'role', issue: 'must be one of owner, admin, member' }])
  t.equal((await owner.rest('POST', `/api/offices/${officeId}/invites`, { email: 'not an address', role: 'member' })).json().details[0].field, 'email')
  t.equal((await owner.rest('PATCH', `/api/offices/${officeId}/members/${owner.userId}`, { role: 'OWNER' })).statusCode, 400)
  t.equal((await rpcError(owner.rpc(OfficesService).updateMemberRole({ officeId, userId: owner.userId, role: 'king' }))).code, Code.InvalidArgument)
  t.equal((await owner.rest('GET', '/api/offices/office_unknown')).statusCode, 404)
  t.equal((await owner.rest('GET', `/api/offices/${officeId}/members?limit=101`)).statusCode, 400)
})

type Who = 'owner' | 'admin' | 'member' | 'outsider' | 'anonymous'
const WHO: Who[] = ['owner', 'admin', 'member', 'outsider', 'anonymous']

interface Cell { status: number, code: Code | 'ok' }
const ok = (status = 200): Cell => ({ status, code: 'ok' })
const denied: Cell = { status: 403, code: Code.PermissionDenied }
const hidden: Cell = { status: 404, code: Code.NotFound }
const signInFirst: Cell = { status: 401, code: Code.Unauthenticated }

t.test('the role × operation matrix, on both transports', async (t) => {
  // Each row: the operation on REST and on RPC, run against a fresh office so state never leaks, and
  // the answer expected of each role.
  interface Row {
    name: string
    expect: Record<Who, Cell>
    rest: (office: Awaited<ReturnType<typeof staffedOffice>>) => { method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown }
    rpc: (office: Awaited<ReturnType<typeof staffedOffice>>, client: ReturnType<typeof rpcClient<typeof OfficesService>>) => Promise<unknown>
  }
  const rows: Row[] = [
    {
      name: 'get the office',
      expect: { owner: ok(), admin: ok(), member: ok(), outsider: hidden, anonymous: signInFirst },
      rest: (o) => ({ method: 'GET', url: `/api/offices/${o.officeId}` }),
      rpc: async (o, c) => await c.getOffice({ officeId: o.officeId })
    },
    {
      name: 'list members',
      expect: { owner: ok(), admin: ok(), member: ok(), outsider: hidden, anonymous: signInFirst },
      rest: (o) => ({ method: 'GET', url: `/api/offices/${o.officeId}/members` }),
      rpc: async (o, c) => await c.listMembers({ officeId: o.officeId })
    },
    {
      name: 'update the office',
      expect: { owner: ok(), admin: ok(), member: denied, outsider: hidden, anonymous: signInFirst },
      rest: (o) => ({ method: 'PATCH', url: `/api/offices/${o.officeId}`, payload: { description: 'changed' } }),
      rpc: async (o, c) => await c.updateOffice({ officeId: o.officeId, description: 'changed' })
    },
    {
      name: 'delete the office',
      expect: { owner: ok(204), admin: denied, member: denied, outsider: hidden, anonymous: signInFirst },
      rest: (o) => ({ method: 'DELETE', url: `/api/offices/${o.officeId}` }),
      rpc: async (o, c) => await c.deleteOffice({ officeId: o.officeId })
    },
    {
      name: 'invite as member',
      expect: { owner: ok(201), admin: ok(201), member: denied, outsider: hidden, anonymous: signInFirst },
      rest: (o) => ({ method: 'POST', url: `/api/offices/${o.officeId}/invites`, payload: { email: uniqueEmail('invitee'), role: 'member' } }),
      rpc: async (o, c) => await c.inviteToOffice({ officeId: o.officeId, email: uniqueEmail('invitee'), role: 'member' })
    },
    {
      name: 'invite as admin',
      expect: { owner: ok(201), admin: denied, member: denied, outsider: hidden, anonymous: signInFirst },
      rest: (o) => ({ method: 'POST', url: `/api/offices/${o.officeId}/invites`, payload: { email: uniqueEmail('invitee'), role: 'admin' } }),
      rpc: async (o, c) => await c.inviteToOffice({ officeId: o.officeId, email: uniqueEmail('invitee'), role: 'admin' })
    },
    {
      name: 'remove the member',
      expect: { owner: ok(204), admin: ok(204), member: ok(204), outsider: hidden, anonymous: signInFirst },
      rest: (o) => ({ method: 'DELETE', url: `/api/offices/${o.officeId}/members/${o.member.userId}` }),
      rpc: async (o, c) => await c.removeMember({ officeId: o.officeId, userId: o.member.userId })
    },
    {
      name: 'remove the admin',
      expect: { owner: ok(204), admin: ok(204), member: denied, outsider: hidden, anonymous: signInFirst },
      rest: (o) => ({ method: 'DELETE', url: `/api/offices/${o.officeId}/members/${o.admin.userId}` }),
      rpc: async (o, c) => await c.removeMember({ officeId: o.officeId, userId: o.admin.userId })
    },
    {
      name: 'make the member an admin',
      expect: { owner: ok(), admin: denied, member: denied, outsider: hidden, anonymous: signInFirst },
      rest: (o) => ({ method: 'PATCH', url: `/api/offices/${o.officeId}/members/${o.member.userId}`, payload: { role: 'admin' } }),
      rpc: async (o, c) => await c.updateMemberRole({ officeId: o.officeId, userId: o.member.userId, role: 'admin' })
    },
    {
      name: 'list pending invitations',
      expect: { owner: ok(), admin: ok(), member: denied, outsider: hidden, anonymous: signInFirst },
      rest: (o) => ({ method: 'GET', url: `/api/offices/${o.officeId}/invites` }),
      rpc: async () => 'REST only'
    }
  ]
  // "remove the admin" as admin removes themselves (leaving), which anyone may; "remove the member"
  // as member is leaving too. Both are in the matrix as allowed for that reason.
  for (const row of rows) {
    for (const who of WHO) {
      for (const transport of ['REST', 'RPC'] as const) {
        if (transport === 'RPC' && row.name === 'list pending invitations') continue
        const office = await staffedOffice('matrix')
        const cell = row.expect[who]
        if (transport === 'REST') {
          const { method, url, payload } = row.rest(office)
          const res = who === 'anonymous' ? await anonymous(method, url, payload) : await office[who].rest(method, url, payload)
          t.equal(res.statusCode, cell.status, `${row.name} as ${who} (REST): ${res.body.slice(0, 80)}`)
        } else {
          const client = who === 'anonymous' ? rpcClient(s, OfficesService) : office[who].rpc(OfficesService)
          let code: Code | 'ok' = 'ok'
          try {
            await row.rpc(office, client)
          } catch (error) {
            code = (await rpcError(Promise.reject(error))).code
          }
          t.equal(code, cell.code, `${row.name} as ${who} (RPC)`)
        }
      }
    }
  }
})

t.test('the last owner can neither leave, be removed nor be demoted; with a second owner they can', async (t) => {
  const { officeId, owner, admin } = await staffedOffice('last-owner')
  const leave = await owner.rest('DELETE', `/api/offices/${officeId}/members/${owner.userId}`)
  t.equal(leave.statusCode, 409)
  t.equal(leave.json().error, 'FailedPrecondition')
  t.equal((await rpcError(owner.rpc(OfficesService).removeMember({ officeId, userId: owner.userId }))).code, Code.FailedPrecondition)
  t.equal((await owner.rest('PATCH', `/api/offices/${officeId}/members/${owner.userId}`, { role: 'admin' })).statusCode, 409, 'no self-demotion either')
  t.equal((await rpcError(owner.rpc(OfficesService).updateMemberRole({ officeId, userId: owner.userId, role: 'member' }))).code, Code.FailedPrecondition)

  t.match((await owner.rest('PATCH', `/api/offices/${officeId}/members/${admin.userId}`, { role: 'owner' })).json().data, { userId: admin.userId, role: 'owner', user: { id: admin.userId } })
  t.equal((await owner.rest('DELETE', `/api/offices/${officeId}/members/${owner.userId}`)).statusCode, 204, 'with another owner, the first may leave')
  t.equal((await admin.rest('DELETE', `/api/offices/${officeId}/members/${admin.userId}`)).statusCode, 409, 'now the other is the last')
})

t.test('two owners demoting each other at the same moment leave exactly one owner', async (t) => {
  for (let trial = 0; trial < 5; trial++) {
    const { officeId, owner, admin } = await staffedOffice('race')
    await owner.rest('PATCH', `/api/offices/${officeId}/members/${admin.userId}`, { role: 'owner' })
    const [a, b] = await Promise.all([
      owner.rest('PATCH', `/api/offices/${officeId}/members/${admin.userId}`, { role: 'member' }),
      admin.rest('PATCH', `/api/offices/${officeId}/members/${owner.userId}`, { role: 'member' })
    ])
    // The office row is locked for role changes and the caller's role read after the lock: the second
    // sees the first's effect (its caller is no owner any more: 403), never a role from before it.
    t.same([a.statusCode, b.statusCode].sort(), [200, 403], `trial ${trial}: one demotion wins, the other is refused`)
    const members = (await owner.rest('GET', `/api/offices/${officeId}/members`)).json().data.concat((await admin.rest('GET', `/api/offices/${officeId}/members`)).json().data ?? [])
    const owners = new Set(members.filter((m: { role: string }) => m.role === 'owner').map((m: { userId: string }) => m.userId))
    t.equal(owners.size, 1, `trial ${trial}: one owner remains`)
  }
})

t.test('an owner demoted while deleting the office: the deletion sees the demotion (never a role from before it)', async (t) => {
  for (let trial = 0; trial < 5; trial++) {
    const { officeId, owner, admin } = await staffedOffice('stale')
    await owner.rest('PATCH', `/api/offices/${officeId}/members/${admin.userId}`, { role: 'owner' })
    const [demote, remove] = await Promise.all([
      owner.rest('PATCH', `/api/offices/${officeId}/members/${admin.userId}`, { role: 'member' }),
      admin.rest('DELETE', `/api/offices/${officeId}`)
    ])
    const outcome = [demote.statusCode, remove.statusCode]
    t.ok((outcome[0] === 200 && outcome[1] === 403) || (outcome[0] === 404 && outcome[1] === 204), `trial ${trial}: one order or the other, ${outcome.join(', ')}`)
  }
})

t.test('two owners leaving at the same moment: one leaves, the last one stays', async (t) => {
  for (let trial = 0; trial < 5; trial++) {
    const { officeId, owner, admin } = await staffedOffice('leave-race')
    await owner.rest('PATCH', `/api/offices/${officeId}/members/${admin.userId}`, { role: 'owner' })
    const [a, b] = await Promise.all([
      owner.rest('DELETE', `/api/offices/${officeId}/members/${owner.userId}`),
      admin.rpc(OfficesService).removeMember({ officeId, userId: admin.userId }).then(() => 204, async (error: unknown) => (await rpcError(Promise.reject(error))).code === Code.FailedPrecondition ? 409 : 500)
    ])
    t.same([a.statusCode, b].sort(), [204, 409], `trial ${trial}: one leaves, the last owner is refused`)
  }
})

t.test('a removed member loses access on their very next request, whatever tokens they hold', async (t) => {
  const { officeId, owner, member } = await staffedOffice('removed')
  t.equal((await member.rest('GET', `/api/offices/${officeId}`)).statusCode, 200)
  t.ok((await member.rpc(OfficesService).getOffice({ officeId })).office)
  t.equal((await owner.rest('DELETE', `/api/offices/${officeId}/members/${member.userId}`)).statusCode, 204)
  t.equal((await member.rest('GET', `/api/offices/${officeId}`)).statusCode, 404, 'REST, same cookie')
  t.equal((await rpcError(member.rpc(OfficesService).getOffice({ officeId }))).code, Code.NotFound, 'RPC, same token')
  t.equal((await rpcError(member.rpc(OfficesService, { binary: true }).listMembers({ officeId }))).code, Code.NotFound)
  t.notOk((await member.rest('GET', '/api/offices?limit=100')).json().data.some((o: { id: string }) => o.id === officeId), 'nor is it listed')
})
