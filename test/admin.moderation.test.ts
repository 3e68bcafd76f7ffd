// The admin side of trust and safety (issue 32 item 2, DECISIONS §11–§12) over REST: a user's report
// triaged and resolved with a suspension, the appeal decided (overturned: the suspension is lifted),
// a super admin lifting a suspension without an appeal (an admin may not: 403, audited as denied),
// messages of the day and the widget catalogue managed — each action one `permitted` audit row with
// its target, a refused or failed action none beyond the denial.
import t from 'tap'
import { startApp, uniqueClientIp } from './helpers/app.js'
import { startOidcProvider } from './helpers/oidc-provider.js'
import { signInPerson } from './helpers/people.js'

const provider = await startOidcProvider()
t.teardown(provider.close)
const s = await startApp({ OIDC_ISSUER: provider.issuer, OIDC_AUDIENCE: provider.audience })
t.teardown(s.close)

const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
const moderatorSub = `moderator-${run}`
const moderator = await provider.sign({ sub: moderatorSub, email: 'mod@example.test', roles: ['admin'] })
const root = await provider.sign({ sub: `root-${run}`, roles: ['super_admin'] })

async function admin (token: string, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) {
  return await s.app.inject({
    method, url, headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': uniqueClientIp() }, ...(payload === undefined ? {} : { payload })
  })
}

/** The author's status code on a read, once it reads `status`: a lifted suspension reaches every
 *  instance's session cache over LISTEN/NOTIFY after the commit (on Postgres, a moment later). */
async function authorReads (status: number): Promise<number> {
  let code = 0
  for (let tries = 0; tries < 50 && code !== status; tries++) {
    if (tries > 0) await new Promise((resolve) => setTimeout(resolve, 100))
    code = (await author.rest('GET', '/api/rooms')).statusCode
  }
  return code
}

async function auditOf (query: string): Promise<Array<Record<string, unknown>>> {
  const res = await admin(root, 'GET', `/api/admin/audit?${query}&limit=100`)
  return res.json().data
}

let author = await signInPerson(s, 'author')
/** A suspension revokes the author's sessions (DECISIONS §11): they sign in again to read why and appeal. */
async function authorSignsInAgain (): Promise<void> { author = await signInPerson(s, 'author', author.email) }
const reporter = await signInPerson(s, 'reporter')
const room = (await author.rest('POST', '/api/rooms', { name: `Spam ${run}`, isPublic: true })).json().data

async function reportRoom (): Promise<string> {
  const res = await reporter.rest('POST', '/api/reports', { targetType: 'room', targetId: room.id, reason: 'spam' })
  t.equal(res.statusCode, 201, res.body)
  return res.json().data.id
}

t.test('a report resolved with a suspension, appealed and overturned', async (t) => {
  const reportId = await reportRoom()
  const open = (await admin(moderator, 'GET', '/api/admin/reports?status=open&limit=100')).json()
  t.ok(open.data.some((r: { id: string }) => r.id === reportId), 'listed among the open reports')
  t.match((await admin(moderator, 'GET', `/api/admin/reports/${reportId}`)).json().data, { id: reportId, reporterId: reporter.userId, status: 'open', labels: Array })

  const resolved = await admin(moderator, 'POST', `/api/admin/reports/${reportId}/resolve`, { action: 'suspend', note: 'spam ring' })
  t.equal(resolved.statusCode, 200, resolved.body)
  const { report, action } = resolved.json().data
  t.match(report, { id: reportId, status: 'actioned' })
  t.match(action, { kind: 'suspend', userId: author.userId, takenBy: moderatorSub })
  await authorSignsInAgain()
  t.equal(await authorReads(403), 403, 'the author is suspended')
  t.match((await admin(moderator, 'GET', `/api/admin/users/${author.userId}`)).json().data, { suspendedAt: String })

  const again = await admin(moderator, 'POST', `/api/admin/reports/${reportId}/resolve`, { action: 'dismiss' })
  t.equal(again.statusCode, 409, 'a resolved report cannot be resolved again')

  const appeal = await author.rest('POST', '/api/appeals', { actionId: action.id, text: 'It was a mistake.' })
  t.equal(appeal.statusCode, 201, appeal.body)
  const appealId = appeal.json().data.id as string
  const pending = (await admin(moderator, 'GET', '/api/admin/appeals?status=pending&limit=100')).json().data
  t.ok(pending.some((a: { id: string, userId: string }) => a.id === appealId && a.userId === author.userId), 'in the pending appeals')
  const decided = await admin(moderator, 'POST', `/api/admin/appeals/${appealId}/decide`, { decision: 'overturned' })
  t.equal(decided.statusCode, 200, decided.body)
  t.match(decided.json().data, { appeal: { id: appealId, status: 'overturned' }, action: { id: action.id, reversedAt: String } })
  t.equal(await authorReads(200), 200, 'the suspension is lifted')

  const rows = await auditOf(`actor=${moderatorSub}`)
  t.match(rows, [
    { action: 'admin.decideAppeal', targetType: 'appeal', targetId: appealId, outcome: 'permitted', actor: { email: 'mod@example.test' }, details: { input: { decision: 'overturned' }, actionId: action.id } },
    { action: 'admin.resolveReport', targetType: 'report', targetId: reportId, outcome: 'permitted', details: { input: { action: 'suspend', note: 'spam ring' }, actionId: action.id, reported: { type: 'room', id: room.id } } }
  ], 'one row per action, newest first; the refused second resolution wrote none')
})

t.test('lifting a suspension without an appeal is for super admins', async (t) => {
  const reportId = await reportRoom()
  t.equal((await admin(moderator, 'POST', `/api/admin/reports/${reportId}/resolve`, { action: 'suspend' })).statusCode, 200)
  await authorSignsInAgain()
  const refused = await admin(moderator, 'POST', `/api/admin/users/${author.userId}/unsuspend`, { note: 'please' })
  t.equal(refused.statusCode, 403)
  t.equal((await author.rest('GET', '/api/rooms')).statusCode, 403, 'still suspended')
  const lifted = await admin(root, 'POST', `/api/admin/users/${author.userId}/unsuspend`)
  t.equal(lifted.statusCode, 200, lifted.body)
  t.match(lifted.json().data, { userId: author.userId, reversedActions: [{ kind: 'suspend' }] })
  t.equal(await authorReads(200), 200, 'the suspension is lifted')
  t.equal((await admin(root, 'POST', `/api/admin/users/${author.userId}/unsuspend`)).statusCode, 409, 'not suspended any more')
  const rows = await auditOf(`targetId=${author.userId}`)
  t.match(rows, [
    { action: 'admin.unsuspendUser', outcome: 'permitted', actor: { sub: `root-${run}` } },
    { action: 'admin.unsuspendUser', outcome: 'denied', actor: { sub: moderatorSub }, details: { required: 'super_admin', role: 'admin' } }
  ])
})

t.test('messages of the day: published, shown, ended by setting endsAt to now', async (t) => {
  const text = `Maintenance ${run}`
  const created = await admin(moderator, 'POST', '/api/admin/motd', { text, severity: 'warning', startsAt: new Date(Date.now() - 60_000).toISOString(), endsAt: new Date(Date.now() + 3_600_000).toISOString() })
  t.equal(created.statusCode, 201, created.body)
  const motd = created.json().data
  t.ok((await s.app.inject({ method: 'GET', url: '/api/motd' })).json().data.some((m: { id: string }) => m.id === motd.id), 'shown')
  const ended = await admin(moderator, 'PATCH', `/api/admin/motd/${motd.id as string}`, { endsAt: new Date().toISOString() })
  t.equal(ended.statusCode, 200, ended.body)
  t.notOk((await s.app.inject({ method: 'GET', url: '/api/motd' })).json().data.some((m: { id: string }) => m.id === motd.id), 'no longer shown')
  t.equal((await admin(moderator, 'POST', '/api/admin/motd', { text: 'x'.repeat(501), severity: 'info', startsAt: new Date().toISOString(), endsAt: new Date().toISOString() })).statusCode, 400)
  t.equal((await admin(moderator, 'PATCH', '/api/admin/motd/motd_unknown', { text: 'x' })).statusCode, 404)
  t.same((await auditOf(`targetId=${motd.id as string}`)).map((r) => r.action), ['admin.updateMotd', 'admin.createMotd'])
})

t.test('the widget catalogue: add, change, remove', async (t) => {
  const settingsSchema = { type: 'object', properties: { city: { type: 'string', maxLength: 50 } }, additionalProperties: false }
  const created = await admin(moderator, 'POST', '/api/admin/widgets', { name: `Weather ${run}`, description: 'Forecast', settingsSchema })
  t.equal(created.statusCode, 201, created.body)
  const widget = created.json().data
  t.same(widget.settingsSchema, settingsSchema, 'the schema comes back whole')
  t.ok((await author.rest('GET', '/api/widgets?limit=100')).json().data.some((w: { id: string }) => w.id === widget.id), 'in the catalogue')
  const changed = await admin(moderator, 'PATCH', `/api/admin/widgets/${widget.id as string}`, { description: 'Forecast for a city' })
  t.match(changed.json().data, { id: widget.id, description: 'Forecast for a city' })
  t.equal((await admin(moderator, 'POST', '/api/admin/widgets', { name: 'Bad', settingsSchema: { type: 'no-such-type' } })).statusCode, 400, 'a schema that does not compile')
  t.equal((await admin(moderator, 'DELETE', `/api/admin/widgets/${widget.id as string}`)).statusCode, 204)
  t.equal((await admin(moderator, 'DELETE', `/api/admin/widgets/${widget.id as string}`)).statusCode, 404)
  t.same((await auditOf(`targetId=${widget.id as string}`)).map((r) => r.action), ['admin.deleteWidget', 'admin.updateWidget', 'admin.createWidget'])
})
