// The passport (DECISIONS §10) on both transports: one's own always, another user's only when
// public; skills unique case-insensitively; experience dates (YYYY-MM, end not before start); the
// bounds; account deletion.
import t from 'tap'
import { Code } from '@connectrpc/connect'
import { PassportService } from '../src/gen/app/passport/v1/passport_pb.js'
import { SKILLS_MAX } from '../src/core/passport/passport.types.js'
import { lastMailTo, startApp } from './helpers/app.js'
import { anonymousRest, plain, rpcError, signInPerson } from './helpers/people.js'

const s = await startApp()
t.teardown(s.close)

t.test('an empty passport to begin with; updates on both transports', async (t) => {
  const me = await signInPerson(s, 'passported')
  const empty = await me.rest('GET', '/api/passport')
  t.equal(empty.statusCode, 200)
  t.match(empty.json().data, { userId: me.userId, headline: '', summary: '', location: '', isPublic: false, skills: [], experience: [] })
  t.match(empty.json().data.updatedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)

  const patched = await me.rest('PATCH', '/api/passport', { headline: 'Engineer', location: 'Leeds' })
  t.match(patched.json().data, { headline: 'Engineer', location: 'Leeds', summary: '' })
  const viaRpc = await me.rpc(PassportService, { binary: true }).updatePassport({ summary: 'Builds things' })
  t.match(viaRpc.passport, { headline: 'Engineer', summary: 'Builds things', isPublic: false })
  t.same(plain((await me.rpc(PassportService).getPassport({})).passport), (await me.rest('GET', '/api/passport')).json().data, 'both transports read the same')

  t.equal((await me.rest('PATCH', '/api/passport', {})).statusCode, 400, 'an update must change something')
  const long = await me.rest('PATCH', '/api/passport', { headline: 'x'.repeat(1_000_000) })
  t.equal(long.statusCode, 400)
  t.equal(long.json().details[0].field, 'headline')
  t.equal((await anonymousRest(s)('GET', '/api/passport')).statusCode, 401)
})

t.test('another user\'s passport: 404 while private, readable once public', async (t) => {
  const owner = await signInPerson(s, 'owner')
  const stranger = await signInPerson(s, 'stranger')
  await owner.rest('PATCH', '/api/passport', { headline: 'Hidden' })
  t.equal((await stranger.rest('GET', `/api/passport/${owner.userId}`)).statusCode, 404)
  t.equal((await rpcError(stranger.rpc(PassportService).getPassport({ userId: owner.userId }))).code, Code.NotFound)
  t.equal((await stranger.rest('GET', '/api/passport/user_nobody')).statusCode, 404, 'an unknown user reads the same')
  t.equal((await owner.rest('GET', `/api/passport/${owner.userId}`)).statusCode, 200, 'one\'s own, by id')

  await owner.rpc(PassportService).updatePassport({ isPublic: true })
  const seen = await stranger.rest('GET', `/api/passport/${owner.userId}`)
  t.equal(seen.statusCode, 200)
  t.match(seen.json().data, { headline: 'Hidden', isPublic: true })
  t.equal((await stranger.rpc(PassportService).getPassport({ userId: owner.userId })).passport?.headline, 'Hidden')
})

t.test('skills: unique case-insensitively (409 / ALREADY_EXISTS), level 1-5, remove', async (t) => {
  const me = await signInPerson(s, 'skilled')
  const added = await me.rest('POST', '/api/passport/skills', { name: 'TypeScript', level: 4 })
  t.equal(added.statusCode, 201)
  t.match(added.json().data, { name: 'TypeScript', level: 4 })
  const dup = await me.rest('POST', '/api/passport/skills', { name: ' typescript ' })
  t.equal(dup.statusCode, 409)
  t.match(dup.json(), { error: 'Conflict', message: /already has the skill/ })
  t.equal((await rpcError(me.rpc(PassportService).addSkill({ name: 'TYPESCRIPT' }))).code, Code.AlreadyExists)
  const noLevel = await me.rpc(PassportService, { binary: true }).addSkill({ name: 'Go' })
  t.equal(noLevel.skill?.level, undefined, 'a level not given is unset over RPC')
  t.equal((await me.rest('GET', '/api/passport')).json().data.skills[1].level, null, 'and null over REST')

  for (const level of [0, 6, 2.5, '3']) {
    const bad = await me.rest('POST', '/api/passport/skills', { name: 'Rust', level })
    t.equal(bad.statusCode, 400, `level ${String(level)}`)
    t.equal(bad.json().details[0].field, 'level')
  }
  t.equal((await rpcError(me.rpc(PassportService).addSkill({ name: 'Rust', level: 9 }))).code, Code.InvalidArgument)

  t.equal((await me.rest('DELETE', `/api/passport/skills/${added.json().data.id as string}`)).statusCode, 204)
  t.equal((await me.rest('DELETE', `/api/passport/skills/${added.json().data.id as string}`)).statusCode, 404)
  t.equal((await me.rest('POST', '/api/passport/skills', { name: 'typescript' })).statusCode, 201, 'free again once removed')
  const other = await signInPerson(s, 'thief')
  t.equal((await rpcError(other.rpc(PassportService).removeSkill({ skillId: noLevel.skill!.id }))).code, Code.NotFound, 'one cannot remove another\'s skill')
})

t.test('experience: YYYY-MM dates, end not before start, update and delete', async (t) => {
  const me = await signInPerson(s, 'worker')
  const added = await me.rest('POST', '/api/passport/experience', { title: 'Engineer', company: 'Acme', startDate: '2019-03', endDate: '2021-06' })
  t.equal(added.statusCode, 201)
  t.match(added.json().data, { title: 'Engineer', company: 'Acme', startDate: '2019-03', endDate: '2021-06', description: '' })
  const id = added.json().data.id as string

  const backwards = await me.rest('POST', '/api/passport/experience', { title: 'Time traveller', company: 'Acme', startDate: '2021-06', endDate: '2021-05' })
  t.equal(backwards.statusCode, 400)
  t.same(backwards.json().details, [{ field: 'endDate', issue: 'must not be before startDate (2021-06)' }])
  const rpcBackwards = await rpcError(me.rpc(PassportService).addExperience({ title: 'T', company: 'C', startDate: '2021-06', endDate: '2020-01' }))
  t.equal(rpcBackwards.code, Code.InvalidArgument)
  t.match(rpcBackwards.rawMessage, /endDate/)
  for (const startDate of ['2021-13', '2021-6', '21-06', '2021/06', '1899-12', 'x'.repeat(100_000)]) {
    const bad = await me.rest('POST', '/api/passport/experience', { title: 'T', company: 'C', startDate })
    t.equal(bad.statusCode, 400, `startDate ${startDate.slice(0, 10)}`)
    t.equal(bad.json().details[0].field, 'startDate')
  }
  t.equal((await me.rest('GET', '/api/passport')).json().data.experience.length, 1, 'nothing half-written')

  const current = await me.rest('PATCH', `/api/passport/experience/${id}`, { endDate: '' })
  t.equal(current.json().data.endDate, null, 'an empty endDate makes the position current')
  const viaRpc = await me.rpc(PassportService).updateExperience({ experienceId: id, description: 'Shipped', endDate: '2022-01' })
  t.match(viaRpc.experience, { description: 'Shipped', endDate: '2022-01', startDate: '2019-03' })
  const earlier = await me.rest('PATCH', `/api/passport/experience/${id}`, { startDate: '2023-01' })
  t.equal(earlier.statusCode, 400, 'a start moved past the stored end is refused')
  t.equal(earlier.json().details[0].field, 'endDate')

  const later = (await me.rpc(PassportService).addExperience({ title: 'Lead', company: 'Beta', startDate: '2022-02' })).experience
  t.equal(later?.endDate, undefined, 'a current position has no end date over RPC')
  const order = (await me.rest('GET', '/api/passport')).json().data.experience.map((e: { title: string }) => e.title)
  t.same(order, ['Lead', 'Engineer'], 'current positions first, then the most recent')

  t.equal((await me.rest('DELETE', `/api/passport/experience/${id}`)).statusCode, 204)
  t.equal((await rpcError(me.rpc(PassportService).deleteExperience({ experienceId: id }))).code, Code.NotFound)
})

t.test('the 101st skill is LimitReached / FAILED_PRECONDITION', async (t) => {
  const me = await signInPerson(s, 'polymath')
  await me.rest('PATCH', '/api/passport', { headline: 'Everything' })
  const now = new Date()
  await s.app.deps.db.insertInto('passport_skills').values(Array.from({ length: SKILLS_MAX }, (_, i) => ({
    id: `skill_seed${i}_${me.userId}`, user_id: me.userId, name: `Skill ${i}`, name_key: `skill ${i}`, level: null, created_at: now
  }))).execute()
  const over = await me.rest('POST', '/api/passport/skills', { name: 'One more' })
  t.equal(over.statusCode, 409)
  t.equal(over.json().error, 'LimitReached')
  t.equal((await rpcError(me.rpc(PassportService).addSkill({ name: 'One more' }))).code, Code.FailedPrecondition)
})

t.test('account deletion removes the passport', async (t) => {
  const leaving = await signInPerson(s, 'leaving')
  await leaving.rest('PATCH', '/api/passport', { headline: 'Gone soon', isPublic: true })
  await leaving.rest('POST', '/api/passport/skills', { name: 'Packing' })
  await leaving.rest('POST', '/api/passport/experience', { title: 'Leaver', company: 'Exit', startDate: '2020-01' })
  t.equal((await leaving.rest('POST', '/api/auth/request-deletion')).statusCode, 200)
  const { token } = lastMailTo(s.config, leaving.email)
  t.equal((await anonymousRest(s)('POST', '/api/auth/confirm-deletion', { token })).statusCode, 204)
  const db = s.app.deps.db
  for (const table of ['passports', 'passport_skills', 'passport_experience'] as const) {
    t.equal((await db.selectFrom(table).select('user_id').where('user_id', '=', leaving.userId).execute()).length, 0, `${table} is empty of them`)
  }
})
