// Trust and safety (DECISIONS §11): the moderation loop through the public API with the admin side
// through its core operations (src/core/moderation/, what the admin API calls); hidden content
// absent from every read path and stream for everyone but its owner; a suspended user's streams
// ended and requests refused but for the §11 exceptions; messages, motd, widgets, classification;
// and every "Bad input" line of issue 30.
import t from 'tap'
import { Code } from '@connectrpc/connect'
import { RoomsService } from '../src/gen/app/rooms/v1/rooms_pb.js'
import { SparksService } from '../src/gen/app/sparks/v1/sparks_pb.js'
import type { AdminActor } from '../src/core/actor.js'
import { createMotd, createWidget, decideAppeal, liftSuspension, listReports, resolveReport, takeAction, updateMotd } from '../src/core/moderation/moderation.js'
import { inTransaction, type Transaction } from '../src/core/transaction.js'
import { startApp } from './helpers/app.js'
import { anonymousRest, rpcError, signInPerson, type Person } from './helpers/people.js'
import { eventually } from './helpers/uploads.js'
import { ofType, openStream, type SseMessage, type SseStream } from './helpers/sse.js'

const s = await startApp()
t.teardown(s.close)
const admin: AdminActor = { sub: 'admin-sub-1', email: 'mod@example.test', role: 'super_admin', requestId: 'test' }

/** An admin operation as the admin API runs it: inside one transaction of its own. */
async function asAdmin<T> (work: (tx: Transaction) => Promise<T>): Promise<T> {
  return await inTransaction(s.app.deps, work)
}

async function publicRoomWithSpark (owner: Person, name = 'Garden'): Promise<{ roomId: string, sparkId: string }> {
  const room = await owner.rest('POST', '/api/rooms', { name, isPublic: true })
  const roomId = room.json().data.id as string
  const spark = await owner.rest('POST', '/api/sparks', { roomId, title: 'Tomatoes', content: 'grow them', x: 0, y: 0 })
  return { roomId, sparkId: spark.json().data.id as string }
}

/** The kind of the AppError an operation fails with (undefined when it succeeds). */
async function kindOf (operation: Promise<unknown>): Promise<string | undefined> {
  try {
    await operation
    return undefined
  } catch (error) {
    return (error as { kind?: string }).kind
  }
}

/** Proves an absence on a stream: `act` publishes what should not arrive, then a marker event that should. */
async function absentBefore (stream: SseStream, unwanted: (m: SseMessage) => boolean, act: () => Promise<unknown>, marker: (m: SseMessage) => boolean): Promise<boolean> {
  const from = stream.events().length
  await act()
  await stream.waitFor(marker)
  return !stream.events().slice(from).some(unwanted)
}

const about = (type: string, id: string) => (m: SseMessage): boolean => m.json.type === type && m.json.payload?.id === id

t.test('the moderation loop: report → hide → message → appeal → overturn → visible again', async (t) => {
  const owner = await signInPerson(s, 'owner')
  const reporter = await signInPerson(s, 'reporter')
  const { roomId, sparkId } = await publicRoomWithSpark(owner)
  t.equal((await reporter.rest('GET', `/api/sparks?roomId=${roomId}`)).statusCode, 200, 'the reporter opens the room')
  const ownerStream = await openStream(s.url, { cookie: owner.cookie })
  t.teardown(() => { ownerStream.close() })

  const reported = await reporter.rest('POST', '/api/reports', { targetType: 'spark', targetId: sparkId, reason: 'spam', details: 'BUY NOW http://x.test' })
  t.equal(reported.statusCode, 201, reported.body)
  const report = reported.json().data
  t.match(report, { targetType: 'spark', targetId: sparkId, reason: 'spam', status: 'open' })
  t.notOk('reporterId' in report, 'the reporter is not in the reporter\'s own view either')
  t.equal((await reporter.rest('POST', '/api/reports', { targetType: 'spark', targetId: sparkId, reason: 'abuse' })).statusCode, 409, 'one open report per target')

  const queued = await listReports(s.app.deps.db, { status: 'open', limit: 100 })
  const triage = queued.items.find((r) => r.id === report.id)
  t.equal(triage?.reporterId, reporter.userId, 'admins see the reporter')
  t.same(triage?.labels.map((l) => l.label).sort(), ['abuse', 'clean', 'spam'], 'the report carries the classifier\'s labels')

  const { action } = await asAdmin(async (tx) => await resolveReport(tx, s.app.deps, admin, report.id, { action: 'hide', note: 'spam' }))
  t.match(action, { kind: 'hide', targetType: 'spark', targetId: sparkId, userId: owner.userId, takenBy: admin.sub })
  const actionId = action?.id as string

  const notice = await ownerStream.waitFor(ofType('message:created'))
  t.equal(notice.json.payload?.actionId, actionId, 'message:created reaches the owner\'s stream')
  const inbox = (await owner.rest('GET', '/api/messages')).json()
  t.equal(inbox.data[0].actionId, actionId)
  t.equal(inbox.data[0].readAt, null)

  t.equal((await reporter.rest('GET', `/api/sparks/${sparkId}`)).statusCode, 404, 'hidden: not found for others')
  t.equal((await owner.rest('GET', `/api/sparks/${sparkId}`)).statusCode, 200, 'the owner still sees it')
  const mine = (await reporter.rest('GET', '/api/reports')).json().data.find((r: { id: string }) => r.id === report.id)
  t.match(mine, { status: 'actioned', outcome: 'hide' }, 'the reporter sees what became of the report')

  t.equal((await reporter.rest('POST', '/api/appeals', { actionId, text: 'not mine to appeal' })).statusCode, 404, 'an appeal by someone else')
  const appealed = await owner.rest('POST', '/api/appeals', { actionId, text: 'It was a gardening tip.' })
  t.equal(appealed.statusCode, 201, appealed.body)
  t.equal((await owner.rest('POST', '/api/appeals', { actionId, text: 'again' })).statusCode, 409, 'a second appeal')
  t.match((await owner.rest('GET', '/api/appeals')).json().data[0], { actionId, status: 'pending' })

  const decided = await asAdmin(async (tx) => await decideAppeal(tx, s.app.deps, admin, appealed.json().data.id, { decision: 'overturned' }))
  t.equal(decided.appeal.status, 'overturned')
  t.not(decided.action.reversedAt, null)
  t.equal((await reporter.rest('GET', `/api/sparks/${sparkId}`)).statusCode, 200, 'visible again after the overturn')
  t.match((await owner.rest('GET', '/api/appeals')).json().data[0], { status: 'overturned' })
  t.equal((await owner.rest('GET', '/api/messages')).json().data[0].kind, 'appeal:overturned')

  const messageId = inbox.data[0].id as string
  t.not((await owner.rest('POST', `/api/messages/${messageId}/read`)).json().data.readAt, null, 'read')
  t.equal((await reporter.rest('POST', `/api/messages/${messageId}/read`)).statusCode, 404, 'another user\'s message')
  t.equal((await owner.rest('DELETE', `/api/messages/${messageId}`)).statusCode, 204)
  t.equal((await owner.rest('DELETE', `/api/messages/${messageId}`)).statusCode, 404)
})

t.test('a hidden room and a hidden spark: absent from every read path and stream for others', async (t) => {
  const owner = await signInPerson(s, 'owner')
  const other = await signInPerson(s, 'other')
  const { roomId, sparkId } = await publicRoomWithSpark(owner, 'Hide me')
  const second = await owner.rest('POST', '/api/sparks', { roomId, title: 'Second', content: 'stays', x: 400, y: 0 })
  const secondId = second.json().data.id as string
  t.equal((await other.rest('GET', `/api/canvas/state?roomId=${roomId}`)).statusCode, 200, 'the other user opens the room (a member)')
  const otherStream = await openStream(s.url, { cookie: other.cookie })
  const ownerStream = await openStream(s.url, { cookie: owner.cookie })
  t.teardown(() => { otherStream.close(); ownerStream.close() })

  // A hidden spark: gone from the spark list, the spark read, the canvas state and the stream.
  await asAdmin(async (tx) => await takeAction(tx, s.app.deps, admin, { kind: 'hide', targetType: 'spark', targetId: sparkId }))
  await otherStream.waitFor((m) => m.json.type === 'spark:deleted' && m.json.payload?.id === sparkId)
  const listed = (await other.rest('GET', `/api/sparks?roomId=${roomId}`)).json()
  t.same(listed.data.map((x: { id: string }) => x.id), [secondId], 'ListSparks (REST)')
  t.equal(listed.pagination.total, 1)
  const rpcList = await other.rpc(SparksService).listSparks({ roomId })
  t.same(rpcList.sparks.map((x) => x.id), [secondId], 'ListSparks (RPC)')
  t.equal((await rpcError(other.rpc(SparksService).getSpark({ sparkId }))).code, Code.NotFound, 'GetSpark (RPC)')
  const tiles = (await other.rest('GET', `/api/canvas/state?roomId=${roomId}`)).json().data.tiles as Array<{ tileId: string }>
  t.same(tiles.map((x) => x.tileId), [secondId], 'canvas state')
  t.equal((await other.rest('PATCH', `/api/sparks/${sparkId}`, { title: 'x' })).statusCode, 404, 'no writes to it either')
  t.equal((await owner.rest('GET', `/api/sparks?roomId=${roomId}`)).json().pagination.total, 2, 'the owner sees both')
  t.ok(await absentBefore(otherStream, about('spark:updated', sparkId),
    async () => { await owner.rest('PATCH', `/api/sparks/${sparkId}`, { title: 'still hidden' }); await owner.rest('PATCH', `/api/sparks/${secondId}`, { title: 'marker' }) }, about('spark:updated', secondId)),
  'the hidden spark\'s events stop for others')
  await ownerStream.waitFor((m) => m.json.type === 'spark:updated' && m.json.payload?.id === sparkId)
  t.pass('…but reach its owner')

  // A hidden room: gone from reads, lists and the stream for others.
  await asAdmin(async (tx) => await takeAction(tx, s.app.deps, admin, { kind: 'hide', targetType: 'room', targetId: roomId }))
  await otherStream.waitFor((m) => m.json.type === 'room:deleted' && m.json.payload?.id === roomId)
  t.equal((await other.rest('GET', `/api/rooms/${roomId}`)).statusCode, 404, 'GET /api/rooms/:roomId')
  t.equal((await rpcError(other.rpc(RoomsService).getRoom({ roomId }))).code, Code.NotFound, 'GetRoom (RPC)')
  t.notOk((await other.rest('GET', '/api/rooms')).json().data.some((r: { id: string }) => r.id === roomId), 'the member\'s room list')
  t.notOk((await other.rest('GET', '/api/rooms?scope=public&limit=100')).json().data.some((r: { id: string }) => r.id === roomId), 'the public list')
  t.equal((await other.rest('GET', `/api/sparks?roomId=${roomId}`)).statusCode, 404, 'its sparks')
  t.equal((await other.rest('GET', `/api/canvas/state?roomId=${roomId}`)).statusCode, 404, 'its canvas')
  t.equal((await other.rest('POST', '/api/reports', { targetType: 'room', targetId: roomId, reason: 'spam' })).statusCode, 404, 'a report on it: not found')
  t.equal((await owner.rest('GET', `/api/rooms/${roomId}`)).statusCode, 200, 'the owner still sees the room')
  const marker = await other.rest('POST', '/api/rooms', { name: 'marker room' })
  const markerId = marker.json().data.id as string
  t.ok(await absentBefore(otherStream, about('spark:updated', secondId),
    async () => { await owner.rest('PATCH', `/api/sparks/${secondId}`, { title: 'in a hidden room' }); await other.rest('PATCH', `/api/rooms/${markerId}`, { name: 'marker' }) }, about('room:updated', markerId)),
  'the hidden room\'s events stop for others')
})

t.test('a suspended user: streams ended, sessions revoked, every request refused but the §11 exceptions', async (t) => {
  const user = await signInPerson(s, 'suspect')
  const stream = await openStream(s.url, { cookie: user.cookie })
  const action = await asAdmin(async (tx) => await takeAction(tx, s.app.deps, admin, { kind: 'suspend', targetType: 'user', targetId: user.userId, note: 'abuse' }))
  await stream.ended
  t.pass('the open stream was ended')
  t.equal((await user.rest('GET', '/api/rooms')).statusCode, 401, 'the old session is revoked (REST)')
  t.equal((await rpcError(user.rpc(RoomsService).listRooms({}))).code, Code.Unauthenticated, 'and the old token (RPC)')

  // They may sign in again (DECISIONS §11), and then only read why and appeal.
  const again = await signInPerson(s, 'suspect', user.email)
  const refused = await again.rest('GET', '/api/rooms')
  t.equal(refused.statusCode, 403)
  t.equal(refused.json().error, 'AccountSuspended')
  t.equal((await again.rest('POST', '/api/rooms', { name: 'x' })).statusCode, 403)
  const rpcRefused = await rpcError(again.rpc(RoomsService).listRooms({}))
  t.equal(rpcRefused.code, Code.PermissionDenied)
  t.match(rpcRefused.rawMessage, /AccountSuspended/)
  t.equal((await again.rest('GET', '/api/auth/me')).statusCode, 200, 'GET /api/auth/me')
  const inbox = await again.rest('GET', '/api/messages')
  t.equal(inbox.statusCode, 200, 'GET /api/messages')
  t.equal(inbox.json().data[0].actionId, action.id)
  t.equal((await again.rest('GET', '/api/appeals')).statusCode, 200, 'GET /api/appeals')
  const stream2 = await openStream(s.url, { cookie: again.cookie })
  t.equal(stream2.status, 403, 'no event stream')
  stream2.close()

  await asAdmin(async (tx) => await liftSuspension(tx, s.app.deps, admin, user.userId, {}))
  // Every instance forgets its cached copy of the user on the signal that follows the commit.
  t.ok(await eventually(async () => (await again.rest('GET', '/api/rooms')).statusCode === 200), 'lifted: requests pass again')
  const plainAdmin: AdminActor = { ...admin, role: 'admin' }
  t.equal(await kindOf(asAdmin(async (tx) => await liftSuspension(tx, s.app.deps, plainAdmin, user.userId, {}))), 'forbidden', 'super_admin only')
})

t.test('an appeal overturning a suspension reinstates the account', async (t) => {
  const user = await signInPerson(s, 'appellant')
  const action = await asAdmin(async (tx) => await takeAction(tx, s.app.deps, admin, { kind: 'suspend', targetType: 'user', targetId: user.userId }))
  const back = await signInPerson(s, 'appellant', user.email)
  const appeal = await back.rest('POST', '/api/appeals', { actionId: action.id, text: 'I did nothing wrong' })
  t.equal(appeal.statusCode, 201, 'a suspended user may appeal')
  await asAdmin(async (tx) => await decideAppeal(tx, s.app.deps, admin, appeal.json().data.id, { decision: 'overturned' }))
  t.ok(await eventually(async () => (await back.rest('GET', '/api/rooms')).statusCode === 200), 'reinstated')
})

t.test('reports: bad input', async (t) => {
  const reporter = await signInPerson(s, 'reporter')
  const owner = await signInPerson(s, 'owner')
  const priv = await owner.rest('POST', '/api/rooms', { name: 'secret', isPublic: false })
  const cases: Array<[string, Record<string, unknown>, number, string?]> = [
    ['a target that does not exist', { targetType: 'room', targetId: 'room_nope', reason: 'spam' }, 404],
    ['a private room of someone else', { targetType: 'room', targetId: priv.json().data.id, reason: 'spam' }, 404],
    ['an unknown user', { targetType: 'user', targetId: 'user_nope', reason: 'harassment' }, 404],
    ['an unknown reason', { targetType: 'user', targetId: owner.userId, reason: 'boring' }, 400, 'reason'],
    ['an unknown target type', { targetType: 'planet', targetId: owner.userId, reason: 'spam' }, 400, 'targetType'],
    ['1,001-character details', { targetType: 'user', targetId: owner.userId, reason: 'other', details: 'x'.repeat(1001) }, 400, 'details']
  ]
  for (const [what, body, status, field] of cases) {
    const reply = await reporter.rest('POST', '/api/reports', body)
    t.equal(reply.statusCode, status, what)
    if (field !== undefined) t.equal(reply.json().details?.[0]?.field, field, `${what}: names the field`)
    if (status === 404) t.notMatch(reply.body, /private|secret/, `${what}: reveals nothing`)
  }
  t.equal((await reporter.rest('POST', '/api/reports', { targetType: 'user', targetId: owner.userId, reason: 'other', details: 'x'.repeat(1000) })).statusCode, 201, '1,000 characters pass')
  t.equal((await anonymousRest(s)('POST', '/api/reports', { targetType: 'user', targetId: owner.userId, reason: 'spam' })).statusCode, 401)
})

t.test('appeals: after 30 days, bad text', async (t) => {
  const user = await signInPerson(s, 'late')
  const action = await asAdmin(async (tx) => await takeAction(tx, s.app.deps, admin, { kind: 'warn', targetType: 'user', targetId: user.userId }))
  t.equal((await user.rest('POST', '/api/appeals', { actionId: action.id, text: '' })).statusCode, 400, 'empty text')
  t.equal((await user.rest('POST', '/api/appeals', { actionId: action.id, text: 'x'.repeat(2001) })).statusCode, 400, '2,001 characters')
  await s.app.deps.db.updateTable('moderation_actions').set({ created_at: new Date(Date.now() - 31 * 86_400_000) } as never).where('id', '=', action.id).execute()
  const late = await user.rest('POST', '/api/appeals', { actionId: action.id, text: 'sorry' })
  t.equal(late.statusCode, 409)
  t.match(late.json().message, /30 days/, 'says why')
  t.equal((await user.rest('POST', '/api/appeals', { actionId: 'act_nope', text: 'x' })).statusCode, 404)
})

t.test('widgets: catalogue, installation by the room creator, settings checked, events to members', async (t) => {
  const owner = await signInPerson(s, 'creator')
  const member = await signInPerson(s, 'member')
  const widget = await asAdmin(async (tx) => await createWidget(tx, s.app.deps, admin, {
    name: 'Clock',
    description: 'a clock',
    settingsSchema: { type: 'object', properties: { timezone: { type: 'string', maxLength: 64 }, size: { type: 'integer', minimum: 1, maximum: 5 } }, required: ['timezone'], additionalProperties: false }
  }))
  t.equal(await kindOf(asAdmin(async (tx) => await createWidget(tx, s.app.deps, admin, { name: 'Bad', settingsSchema: { type: 'nonsense' } }))), 'validation', 'a schema Ajv cannot compile')
  t.ok((await member.rest('GET', '/api/widgets')).json().data.some((w: { id: string }) => w.id === widget.id), 'the catalogue')

  const { roomId } = await publicRoomWithSpark(owner, 'Widget room')
  await member.rest('GET', `/api/sparks?roomId=${roomId}`)
  const memberStream = await openStream(s.url, { cookie: member.cookie })
  t.teardown(() => { memberStream.close() })
  const bad = await owner.rest('POST', `/api/rooms/${roomId}/widgets`, { widgetId: widget.id, settings: { timezone: 'UTC', size: 9 } })
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().error, 'ValidationError')
  t.equal(bad.json().details[0].field, 'settings.size', 'names the field')
  t.equal((await owner.rest('POST', `/api/rooms/${roomId}/widgets`, { widgetId: widget.id, settings: {} })).json().details[0].field, 'settings.timezone')
  t.equal((await member.rest('POST', `/api/rooms/${roomId}/widgets`, { widgetId: widget.id, settings: { timezone: 'UTC' } })).statusCode, 403, 'not the creator')
  t.equal((await owner.rest('POST', `/api/rooms/${roomId}/widgets`, { widgetId: 'widget_nope', settings: {} })).statusCode, 404)
  const installed = await owner.rest('POST', `/api/rooms/${roomId}/widgets`, { widgetId: widget.id, settings: { timezone: 'UTC' } })
  t.equal(installed.statusCode, 201, installed.body)
  const installationId = installed.json().data.id as string
  await memberStream.waitFor(ofType('widget:installed'))
  t.same((await member.rest('GET', `/api/rooms/${roomId}/widgets`)).json().data.map((w: { id: string }) => w.id), [installationId], 'members list them')
  const patched = await owner.rest('PATCH', `/api/rooms/${roomId}/widgets/${installationId}`, { settings: { timezone: 'Europe/Paris', size: 2 } })
  t.match(patched.json().data, { settings: { timezone: 'Europe/Paris', size: 2 }, version: 2 })
  await memberStream.waitFor(ofType('widget:updated'))
  t.equal((await member.rest('DELETE', `/api/rooms/${roomId}/widgets/${installationId}`)).statusCode, 403)
  t.equal((await owner.rest('DELETE', `/api/rooms/${roomId}/widgets/${installationId}`)).statusCode, 204)
  await memberStream.waitFor(ofType('widget:removed'))

  const priv = await owner.rest('POST', '/api/rooms', { name: 'private widgets', isPublic: false })
  t.equal((await member.rest('POST', `/api/rooms/${priv.json().data.id as string}/widgets`, { widgetId: widget.id, settings: { timezone: 'UTC' } })).statusCode, 404, 'a private room: not found')
})

t.test('message of the day: public, the active window only', async (t) => {
  const now = Date.now()
  const active = await asAdmin(async (tx) => await createMotd(tx, s.app.deps, admin, { text: 'Maintenance tonight', severity: 'warning', startsAt: new Date(now - 60_000).toISOString(), endsAt: new Date(now + 3_600_000).toISOString() }))
  const future = await asAdmin(async (tx) => await createMotd(tx, s.app.deps, admin, { text: 'Later', severity: 'info', startsAt: new Date(now + 3_600_000).toISOString(), endsAt: new Date(now + 7_200_000).toISOString() }))
  t.equal(await kindOf(asAdmin(async (tx) => await createMotd(tx, s.app.deps, admin, { text: 'x', severity: 'info', startsAt: new Date(now).toISOString(), endsAt: new Date(now - 1).toISOString() }))), 'validation')
  t.equal(await kindOf(asAdmin(async (tx) => await createMotd(tx, s.app.deps, admin, { text: 'x'.repeat(501), severity: 'info', startsAt: new Date(now).toISOString(), endsAt: new Date(now + 1000).toISOString() }))), 'validation')
  const shown = await anonymousRest(s)('GET', '/api/motd')
  t.equal(shown.statusCode, 200)
  const ids = shown.json().data.map((m: { id: string }) => m.id)
  t.ok(ids.includes(active.id))
  t.notOk(ids.includes(future.id))
  t.match(shown.json().data.find((m: { id: string }) => m.id === active.id), { text: 'Maintenance tonight', severity: 'warning' })
  await asAdmin(async (tx) => await updateMotd(tx, s.app.deps, admin, active.id, { endsAt: new Date().toISOString() }))
  t.notOk((await anonymousRest(s)('GET', '/api/motd')).json().data.some((m: { id: string }) => m.id === active.id), 'ended')
})

t.test('a report on a spark of 10,000 characters gets its labels (classified on the compute pool, off the event loop)', async (t) => {
  const owner = await signInPerson(s, 'long-owner')
  const reporter = await signInPerson(s, 'long-reporter')
  const roomId = (await owner.rest('POST', '/api/rooms', { name: 'Long reads', isPublic: true })).json().data.id as string
  const content = 'BUY NOW!!! FREE MONEY at http://a.test, casino bonus, click here. '.repeat(200).slice(0, 10_000)
  const spark = await owner.rest('POST', '/api/sparks', { roomId, title: 'Offer', content, x: 0, y: 0 })
  t.equal(spark.statusCode, 201, spark.body)
  const reported = await reporter.rest('POST', '/api/reports', { targetType: 'spark', targetId: spark.json().data.id, reason: 'spam', details: 'more of the same '.repeat(58) })
  t.equal(reported.statusCode, 201, reported.body)
  const triage = (await listReports(s.app.deps.db, { status: 'open', limit: 100 })).items.find((r) => r.id === reported.json().data.id)
  t.equal(triage?.labels[0]?.label, 'spam', 'spam first')
  t.ok((triage?.labels[0]?.score ?? 0) >= 0.7, `spam scores ${String(triage?.labels[0]?.score)}`)
  t.same(triage?.labels.map((l) => l.label).sort(), ['abuse', 'clean', 'spam'])
})

t.test('classify: labels, determinism, the 10,000-character bound', async (t) => {
  const user = await signInPerson(s, 'classifier')
  const spam = await user.rest('POST', '/api/classify', { text: 'BUY NOW!!! FREE MONEY http://a.test http://b.test casino, click here' })
  t.equal(spam.statusCode, 200)
  const result = spam.json().data
  t.equal(result.flagged, true)
  t.equal(result.labels[0].label, 'spam')
  t.match(result.model, /canvas-safety/)
  // (The expensive tier allows 5 a minute: the repeat goes to the core directly.)
  t.same(await s.app.core.safety.classify({ text: 'BUY NOW!!! FREE MONEY http://a.test http://b.test casino, click here' }), result, 'deterministic')
  const clean = (await user.rest('POST', '/api/classify', { text: 'Tomatoes like sun and water.' })).json().data
  t.equal(clean.flagged, false)
  t.equal(clean.labels[0].label, 'clean')
  t.equal((await user.rest('POST', '/api/classify', { text: 'you fucking idiot' })).json().data.labels[0].label, 'abuse')
  const long = await user.rest('POST', '/api/classify', { text: 'x'.repeat(10_001) })
  t.equal(long.statusCode, 400)
  t.equal(long.json().details[0].field, 'text')
  t.equal((await user.rest('POST', '/api/classify', { text: 'x'.repeat(10_000) })).statusCode, 200)
  t.equal((await anonymousRest(s)('POST', '/api/classify', { text: 'x' })).statusCode, 401)
})
