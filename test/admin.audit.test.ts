// The admin routes and their audit log (issue 32, DECISIONS §12): lists with filters, a super admin's
// room deletion written in the same transaction as its audit row (a failed action leaves none), the
// log newest first with its filters, one JSON log line per row, and the table append-only by the
// database itself: UPDATE, DELETE and TRUNCATE refused whoever sends them (PGlite and Postgres).
import t from 'tap'
import { sql } from 'kysely'
import { startApp, uniqueClientIp } from './helpers/app.js'
import { recordLogs } from './helpers/logs.js'
import { startOidcProvider } from './helpers/oidc-provider.js'
import { signInPerson } from './helpers/people.js'

const provider = await startOidcProvider()
t.teardown(provider.close)
const logs = recordLogs()
const s = await startApp({ OIDC_ISSUER: provider.issuer, OIDC_AUDIENCE: provider.audience, LOG_LEVEL: 'info' }, { logStream: logs.stream })
t.teardown(s.close)

const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
const rootSub = `root-${run}`
const root = await provider.sign({ sub: rootSub, email: 'root@example.test', roles: ['super_admin'] })
const reader = await provider.sign({ sub: `reader-${run}`, roles: ['admin'] })

async function admin (token: string, method: 'GET' | 'DELETE', url: string, ip = uniqueClientIp()) {
  return await s.app.inject({ method, url, headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': ip } })
}

const owner = await signInPerson(s, `owner-${run}`)
const privateRoom = (await owner.rest('POST', '/api/rooms', { name: `Secret ${run}`, isPublic: false })).json().data
const publicRoom = (await owner.rest('POST', '/api/rooms', { name: `Open ${run}`, isPublic: true })).json().data
await owner.rest('POST', '/api/sparks', { roomId: publicRoom.id, title: 'tile', x: 0, y: 0 })

t.test('admins list and read users and rooms, private ones included, with filters', async (t) => {
  const users = await admin(reader, 'GET', `/api/admin/users?email=${encodeURIComponent(owner.email.toUpperCase())}`)
  t.equal(users.statusCode, 200)
  t.match(users.json(), { data: [{ id: owner.userId, email: owner.email, roomCount: 2 }], pagination: { total: 1, totalPages: 1 } })
  t.equal((await admin(reader, 'GET', `/api/admin/users?q=${encodeURIComponent(`owner-${run}`)}`)).json().pagination.total, 1, 'q matches part of the address')
  t.match((await admin(reader, 'GET', `/api/admin/users/${owner.userId}`)).json().data, { id: owner.userId, email: owner.email })
  t.equal((await admin(reader, 'GET', '/api/admin/users/user_unknown')).statusCode, 404)

  const rooms = (await admin(reader, 'GET', `/api/admin/rooms?createdBy=${owner.userId}`)).json()
  t.same(rooms.data.map((r: { id: string }) => r.id), [publicRoom.id, privateRoom.id], 'newest first, the private one included')
  t.match(rooms.data[0], { memberCount: 1, sparkCount: 1, isPublic: true })
  t.same((await admin(reader, 'GET', `/api/admin/rooms?createdBy=${owner.userId}&isPublic=false`)).json().data.map((r: { id: string }) => r.id), [privateRoom.id])
  t.same((await admin(reader, 'GET', `/api/admin/rooms?q=${encodeURIComponent(`Secret ${run}`)}`)).json().data.map((r: { id: string }) => r.id), [privateRoom.id])
  t.same((await admin(reader, 'GET', '/api/admin/rooms?q=%25')).json().pagination.total >= 0, true, 'a LIKE wildcard is matched literally, not an error')
  t.match((await admin(reader, 'GET', `/api/admin/rooms/${privateRoom.id as string}`)).json().data, { id: privateRoom.id, isPublic: false })

  for (const bad of ['/api/admin/users?limit=101', '/api/admin/rooms?isPublic=maybe', '/api/admin/audit?actor=', '/api/admin/users?role=x']) {
    const res = await admin(reader, 'GET', bad)
    t.equal(res.statusCode, 400, `${bad}: 400`)
    t.equal(res.json().error, 'ValidationError')
  }
  t.equal(await auditCount(), 0, 'reads are not audited')
})

/** This file's rows (its actors' subs carry the run): on a shared Postgres other tests write rows too. */
async function auditCount (): Promise<number> {
  const row = await s.app.deps.db.selectFrom('admin_audit_log').where('actor_sub', 'like', `%-${run}`).select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()
  return Number(row.n)
}

t.test('a super admin deletes any room; the action and its audit row commit together', async (t) => {
  const ip = uniqueClientIp()
  const from = logs.lines.length
  const res = await admin(root, 'DELETE', `/api/admin/rooms/${privateRoom.id as string}`, ip)
  t.equal(res.statusCode, 204, res.body)
  t.equal((await owner.rest('GET', `/api/rooms/${privateRoom.id as string}`)).statusCode, 404, 'the room is gone')

  const rows = (await admin(root, 'GET', `/api/admin/audit?targetId=${privateRoom.id as string}`)).json().data
  t.equal(rows.length, 1)
  t.match(rows[0], {
    actor: { sub: rootSub, email: 'root@example.test' },
    action: 'admin.deleteRoom',
    targetType: 'room',
    targetId: privateRoom.id,
    outcome: 'permitted',
    clientIp: ip,
    details: { name: `Secret ${run}`, createdBy: owner.userId, isPublic: false }
  })
  t.ok(rows[0].requestId !== '', 'the request id')
  if (res.headers['x-request-id'] !== undefined) t.equal(rows[0].requestId, res.headers['x-request-id'])
  const line = await logs.waitFor((l) => l.msg === 'admin audit', 5_000, from)
  t.same(line.audit, rows[0], 'the same entry as one JSON log line')

  const before = await auditCount()
  const missing = await admin(root, 'DELETE', '/api/admin/rooms/room_gone')
  t.equal(missing.statusCode, 404)
  t.equal(await auditCount(), before, 'an action that failed wrote no row (its transaction rolled back)')
})

t.test('the audit log: newest first, filtered by actor, action and target, paged', async (t) => {
  const extra = (await owner.rest('POST', '/api/rooms', { name: `Extra ${run}` })).json().data
  t.equal((await admin(root, 'DELETE', `/api/admin/rooms/${extra.id as string}`)).statusCode, 204)
  const denied = await provider.sign({ sub: `nobody-${run}`, roles: [] })
  t.equal((await admin(denied, 'GET', '/api/admin/audit')).statusCode, 403)

  const mine = (await admin(root, 'GET', `/api/admin/audit?actor=${rootSub}`)).json()
  t.same(mine.data.map((r: { targetId: string }) => r.targetId), [extra.id, privateRoom.id], 'newest first')
  t.equal(mine.pagination.total, 2)
  const second = (await admin(root, 'GET', `/api/admin/audit?actor=${rootSub}&limit=1&page=2`)).json()
  t.same(second.data.map((r: { targetId: string }) => r.targetId), [privateRoom.id])
  t.match(second.pagination, { page: 2, limit: 1, total: 2, totalPages: 2 })
  t.same((await admin(root, 'GET', `/api/admin/audit?action=admin.listAudit&actor=nobody-${run}`)).json().data.map((r: { outcome: string }) => r.outcome), ['denied'])
  t.equal((await admin(root, 'GET', `/api/admin/audit?actor=${rootSub}&action=admin.listAudit`)).json().pagination.total, 0)
})

t.test('the database refuses UPDATE, DELETE and TRUNCATE on the audit log', async (t) => {
  const db = s.app.deps.db
  const before = await auditCount()
  t.ok(before > 0)
  for (const statement of [
    sql`update admin_audit_log set outcome = 'permitted', actor_sub = 'someone-else'`,
    sql`delete from admin_audit_log`,
    sql`delete from admin_audit_log where action = 'admin.deleteRoom'`,
    sql`truncate admin_audit_log`
  ]) {
    await t.rejects(statement.execute(db), /append-only/, statement.compile(db).sql)
  }
  t.equal(await auditCount(), before, 'every row is still there')
  t.same((await admin(root, 'GET', `/api/admin/audit?action=admin.listAudit&actor=nobody-${run}`)).json().data.map((r: { outcome: string }) => r.outcome), ['denied'], 'unchanged')
})
