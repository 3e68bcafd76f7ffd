// Users (issue 21, DECISIONS §9) on both transports: a user's display info (the e-mail address only
// to its owner), profile updates with their rules, the new name on the next request on every
// instance, search by name prefix or exact address (never an address prefix), display info in bulk.
import t from 'tap'
import { randomUUID } from 'node:crypto'
import { Code } from '@connectrpc/connect'
import { UsersService } from '../src/gen/app/users/v1/users_pb.js'
import { AuthService } from '../src/gen/app/auth/v1/auth_pb.js'
import { openDatabase } from '../src/db/database.js'
import { migratedDataDir } from './helpers/database-template.js'
import { startApp, uniqueEmail } from './helpers/app.js'
import { anonymousRest, plain, rpcError, signInPerson } from './helpers/people.js'
import { formOf, SAMPLES, uploadClient } from './helpers/uploads.js'

const unlimited = 1_000_000_000
const s = await startApp({}, { rateLimit: { maxOverride: { strict: unlimited, write: unlimited, read: unlimited, standard: unlimited } } })
t.teardown(s.close)
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/
/** A name prefix no other test's users share, so search results are this test's own. */
const uniquePrefix = (): string => `zq${randomUUID().replaceAll('-', '').slice(0, 10)}`

t.test('a user\'s display info to anyone signed in; the e-mail address only to themself', async (t) => {
  const alice = await signInPerson(s, 'alice')
  const bob = await signInPerson(s, 'bob')
  const own = (await alice.rest('GET', `/api/users/${alice.userId}`)).json().data
  t.same(own, { id: alice.userId, email: alice.email, displayName: alice.email.split('@')[0], avatarUrl: '', createdAt: own.createdAt })
  t.match(own.createdAt, ISO_MS)
  const other = (await bob.rest('GET', `/api/users/${alice.userId}`)).json().data
  t.same(other, { id: alice.userId, displayName: own.displayName, avatarUrl: '', createdAt: own.createdAt }, 'no email key for another user')

  for (const binary of [false, true]) {
    const ownRpc = await alice.rpc(UsersService, { binary }).getUser({ userId: alice.userId })
    t.same(plain(ownRpc.user), own, `RPC ${binary ? 'binary' : 'JSON'} GetUser answers the REST shape`)
    const otherRpc = await bob.rpc(UsersService, { binary }).getUser({ userId: alice.userId })
    t.equal(otherRpc.user?.email, '', 'RPC: the address is empty for another user')
    t.equal(otherRpc.user?.displayName, own.displayName)
  }

  t.equal((await bob.rest('GET', '/api/users/no-such-user')).statusCode, 404)
  t.equal((await rpcError(bob.rpc(UsersService).getUser({ userId: 'no-such-user' }))).code, Code.NotFound)
  t.equal((await anonymousRest(s)('GET', `/api/users/${alice.userId}`)).statusCode, 401)
  t.equal((await bob.rest('GET', `/api/users/${'x'.repeat(201)}`)).statusCode, 400)
})

t.test('profile updates: NFC and trimmed, 1 to 64 characters, no control or bidi characters', async (t) => {
  const carol = await signInPerson(s, 'carol')
  const updated = await carol.rest('PATCH', '/api/users/me', { displayName: '  Cafe\u0301 Carol  ' })
  t.equal(updated.statusCode, 200)
  t.same(updated.json().data, { id: carol.userId, email: carol.email, displayName: 'Caf\u00e9 Carol', avatarUrl: '', createdAt: updated.json().data.createdAt })

  const viaRpc = await carol.rpc(UsersService, { binary: true }).updateProfile({ displayName: 'Carol C.' })
  t.equal(viaRpc.user?.displayName, 'Carol C.')
  t.equal(viaRpc.user?.email, carol.email, 'the caller\'s full User')
  t.equal((await carol.rpc(UsersService).updateProfile({})).user?.displayName, 'Carol C.', 'unset fields stay')

  t.equal((await carol.rest('PATCH', '/api/users/me', { displayName: '😀'.repeat(64) })).statusCode, 200, '64 characters (128 UTF-16 units) fit')
  const refusals: Array<[string, unknown]> = [
    ['empty', ''],
    ['only spaces', '   '],
    ['65 characters', 'a'.repeat(65)],
    ['control characters', 'a\u0000b'],
    ['a newline', 'Carol\nAdmin'],
    ['a right-to-left override', 'Carol\u202Egnp.exe'],
    ['an isolate', 'a\u2066b'],
    ['a lone surrogate', 'a\ud800b'],
    ['a number', 42],
    ['1 MB', 'x'.repeat(1_000_000)],
    // Names that show as nobody (issue 26 item 7): only invisible or blank characters.
    ['zero-width spaces', '\u200B\u200B'],
    ['a word joiner', '\u2060'],
    ['tag characters', '\u{E0041}\u{E0064}\u{E006D}\u{E0069}\u{E006E}'],
    ['Hangul fillers', '\u3164\u3164'],
    ['a half-width Hangul filler', '\uFFA0'],
    ['a Braille blank', '\u2800\u2800'],
    ['invisible and blank together', ' \u200B\u3000\u2060\u180E '],
    ['a variation selector and a soft hyphen', '\uFE0F\u00AD']
  ]
  for (const [label, displayName] of refusals) {
    const res = await carol.rest('PATCH', '/api/users/me', { displayName })
    t.equal(res.statusCode, 400, label)
    t.equal(res.json().details?.[0]?.field, 'displayName', `${label}: names the field`)
  }
  const rpcRefusal = await rpcError(carol.rpc(UsersService).updateProfile({ displayName: '\u0007bell' }))
  t.equal(rpcRefusal.code, Code.InvalidArgument)
  for (const displayName of ['\u200B', '\u3164', '\u{E0041}']) {
    const invisible = await rpcError(carol.rpc(UsersService, { binary: true }).updateProfile({ displayName }))
    t.equal(invisible.code, Code.InvalidArgument, `RPC: ${JSON.stringify(displayName)}`)
    t.match(invisible.rawMessage, /displayName/)
  }
  for (const displayName of ['Zoë\u200B', '👩\u200D💻 Dev', 'ㅤA']) t.equal((await carol.rest('PATCH', '/api/users/me', { displayName })).statusCode, 200, `one visible character is enough: ${JSON.stringify(displayName)}`)
  t.equal((await carol.rest('PATCH', '/api/users/me', { email: 'x@example.com' })).statusCode, 400, 'the address is not a profile field')
  t.equal((await anonymousRest(s)('PATCH', '/api/users/me', { displayName: 'x' })).statusCode, 401)
})

t.test('avatarUrl: only an avatar uploaded to this service, or empty to clear', async (t) => {
  const dave = await signInPerson(s, 'dave')
  for (const avatarUrl of ['https://evil.example/a.png', 'javascript:alert(1)', `${s.config.appUrl}/api/rooms/x`, `${s.config.appUrl}/api/uploads/../auth/me`]) {
    const res = await dave.rest('PATCH', '/api/users/me', { avatarUrl })
    t.equal(res.statusCode, 400, avatarUrl)
    t.equal(res.json().details?.[0]?.field, 'avatarUrl')
  }
  const cleared = await dave.rest('PATCH', '/api/users/me', { avatarUrl: '' })
  t.equal(cleared.statusCode, 200)
  t.equal(cleared.json().data.avatarUrl, '')
})

t.test('the new name shows on the next request, through the session cache, on both transports', async (t) => {
  const erin = await signInPerson(s, 'erin')
  // Warm both caches: the cookie session and the RPC token's session.
  t.equal((await erin.rest('GET', '/api/auth/me')).json().data.displayName, erin.email.split('@')[0])
  t.equal((await erin.rpc(AuthService).getMe({})).user?.displayName, erin.email.split('@')[0])
  await erin.rest('PATCH', '/api/users/me', { displayName: 'Erin Renamed' })
  t.equal((await erin.rest('GET', '/api/auth/me')).json().data.displayName, 'Erin Renamed', 'REST /me')
  t.equal((await erin.rpc(AuthService).getMe({})).user?.displayName, 'Erin Renamed', 'RPC GetMe')
})

t.test('a profile change reaches the cached copy on another instance', async (t) => {
  const database = await openDatabase({ databaseUrl: undefined, dataDir: migratedDataDir() })
  const env = { DATABASE_URL: undefined, REDIS_URL: undefined }
  const a = await startApp(env, { database })
  const b = await startApp(env, { database })
  t.teardown(async () => { await a.close(); await b.close(); await database.close() })
  const frank = await signInPerson(a, 'frank')
  const meOnB = async (): Promise<string> => (await b.app.inject({ method: 'GET', url: '/api/auth/me', cookies: { app_session: frank.cookie } })).json().data.displayName
  t.equal(await meOnB(), frank.email.split('@')[0], 'instance B has cached the session with its user')
  const changed = await a.app.inject({ method: 'PATCH', url: '/api/users/me', cookies: { app_session: frank.cookie }, payload: { displayName: 'Frank on A' } })
  t.equal(changed.statusCode, 200)
  // The signal travels over the database's notification channel; give it the moment it takes.
  const deadline = Date.now() + 2000
  while (await meOnB() !== 'Frank on A' && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5))
  t.equal(await meOnB(), 'Frank on A', 'instance B answers the new name')
})

t.test('search: display names by case-insensitive prefix, an address only exactly', async (t) => {
  const prefix = uniquePrefix()
  const searcher = await signInPerson(s, 'searcher')
  const people = await Promise.all(['Anna', 'anton', 'BORIS', '50%_off'].map(async (name) => {
    const person = await signInPerson(s, 'named')
    await person.rest('PATCH', '/api/users/me', { displayName: `${prefix}${name}` })
    return person
  }))
  const names = async (q: string, extra = ''): Promise<string[]> => {
    const res = await searcher.rest('GET', `/api/users?q=${encodeURIComponent(q)}${extra}`)
    t.equal(res.statusCode, 200, `q=${q}`)
    return res.json().data.map((u: { displayName: string }) => u.displayName)
  }
  t.same(await names(prefix), [`${prefix}50%_off`, `${prefix}Anna`, `${prefix}anton`, `${prefix}BORIS`], 'in name order (lower-cased, byte order)')
  t.same(await names(`${prefix}AN`), [`${prefix}Anna`, `${prefix}anton`], 'case-insensitive')
  t.same(await names(`${prefix.toUpperCase()}b`), [`${prefix}BORIS`])
  t.same(await names(`${prefix}50%`), [`${prefix}50%_off`], '% is literal')
  t.same(await names(`${prefix}_`), [], '_ is literal')

  const paged = await searcher.rest('GET', `/api/users?q=${prefix}&limit=3&page=2`)
  t.same(paged.json().pagination, { page: 2, limit: 3, total: 4, totalPages: 2 })
  t.equal(paged.json().data.length, 1)
  const first = await searcher.rest('GET', `/api/users?q=${prefix}&limit=3`)
  t.same(first.json().pagination, { page: 1, limit: 3, total: 4, totalPages: 2 })
  t.notOk(first.json().data.some((u: object) => 'email' in u), 'results carry no addresses')

  const target = people[0]!
  const byAddress = (await searcher.rest('GET', `/api/users?q=${encodeURIComponent(target.email.toUpperCase())}`)).json()
  t.same(byAddress.data.map((u: { id: string }) => u.id), [target.userId], 'the exact address, any case')
  t.same(await names(target.email.slice(0, -1)), [], 'never an address prefix')
  t.same(await names(target.email.split('@')[0]!), [], 'nor a local part (names were changed)')

  const rpc = await searcher.rpc(UsersService, { binary: true }).searchUsers({ query: `${prefix}an`, limit: 10 })
  t.same(rpc.users.map((u) => u.displayName), [`${prefix}Anna`, `${prefix}anton`])
  t.ok(rpc.users.every((u) => u.email === ''))
  t.match(plain(rpc.pagination), { page: 1, limit: 10, total: 2, totalPages: 1 })

  for (const q of ['', 'a', ' a ', '\u00e9']) {
    const res = await searcher.rest('GET', `/api/users?q=${encodeURIComponent(q)}`)
    t.equal(res.statusCode, 400, `q=${JSON.stringify(q)}`)
    t.equal(res.json().details?.[0]?.field, 'q')
  }
  t.equal((await searcher.rest('GET', '/api/users')).statusCode, 400, 'no q')
  t.equal((await searcher.rest('GET', `/api/users?q=${'a'.repeat(300)}`)).statusCode, 400, 'over-long q')
  t.equal((await searcher.rest('GET', `/api/users?q=${prefix}&limit=101`)).statusCode, 400)
  t.equal((await rpcError(searcher.rpc(UsersService).searchUsers({ query: 'a' }))).code, Code.InvalidArgument)
  t.equal((await anonymousRest(s)('GET', `/api/users?q=${prefix}`)).statusCode, 401)
})

t.test('search is case-insensitive in every script, on any database locale', async (t) => {
  const tag = randomUUID().replaceAll('-', '').slice(0, 8)
  const searcher = await signInPerson(s, 'unicode-searcher')
  const named = async (displayName: string): Promise<string> => {
    const person = await signInPerson(s, 'unicode')
    t.equal((await person.rest('PATCH', '/api/users/me', { displayName })).statusCode, 200, displayName)
    return person.userId
  }
  const elodie = await named(`Élodie ${tag}`)
  const strasse = await named(`Straße ${tag}`)
  const sofia = await named(`ΣΟΦΊΑ ${tag}`)
  const hidden = await named(`Bo\u200Bb ${tag}`)
  const found = async (q: string): Promise<string[]> => {
    const ids: string[] = []
    for (let page = 1; ; page++) {
      const res = await searcher.rest('GET', `/api/users?q=${encodeURIComponent(q)}&limit=100&page=${page}`)
      t.equal(res.statusCode, 200, q)
      ids.push(...res.json().data.map((u: { id: string }) => u.id))
      if (page >= res.json().pagination.totalPages) return ids
    }
  }
  t.ok((await found('él')).includes(elodie), 'Élodie is found by él')
  for (const q of [`élodie ${tag}`, `ÉLODIE ${tag}`, `E\u0301LODIE ${tag}`]) t.same(await found(q), [elodie], q)
  t.same(await found(`strasse ${tag}`), [strasse], 'ß folds to ss')
  t.same(await found(`σοφία ${tag}`), [sofia], 'Greek, with its accent')
  t.same(await found(`bob ${tag}`), [hidden], 'a zero-width space inside a name does not hide it')
  t.same(await found(`elodie ${tag}`), [], 'accents still count')
  const rpc = await searcher.rpc(UsersService).searchUsers({ query: 'éLO', limit: 100 })
  t.ok(rpc.users.some((u) => u.id === elodie) || rpc.pagination!.total >= 100, 'RPC: the same search')
  t.same((await searcher.rpc(UsersService, { binary: true }).searchUsers({ query: `ÉLODIE ${tag}` })).users.map((u) => u.id), [elodie], 'RPC binary')
  for (const q of ['\u200B\u200B', 'a\u200B', ' \u2060 ']) t.equal((await searcher.rest('GET', `/api/users?q=${encodeURIComponent(q)}`)).statusCode, 400, `too short once invisible characters are left aside: ${JSON.stringify(q)}`)
})

t.test('a query with @ finds the one address exactly, then names starting with it', async (t) => {
  const prefix = uniquePrefix()
  const searcher = await signInPerson(s, 'at-searcher')
  const owner = await signInPerson(s, 'at-owner')
  const atName = await signInPerson(s, 'at-name')
  const lookalike = await signInPerson(s, 'at-lookalike')
  // One user is named like someone else's address; another has "@" in their name.
  await lookalike.rest('PATCH', '/api/users/me', { displayName: `${owner.email} (not them)` })
  await atName.rest('PATCH', '/api/users/me', { displayName: `${prefix}@work` })
  const ids = async (q: string, extra = ''): Promise<{ ids: string[], total: number }> => {
    const res = (await searcher.rest('GET', `/api/users?q=${encodeURIComponent(q)}${extra}`)).json()
    return { ids: res.data.map((u: { id: string }) => u.id), total: res.pagination.total }
  }
  t.same(await ids(`${prefix}@work`), { ids: [atName.userId], total: 1 }, 'a name with @ is found by name')
  t.same(await ids(`${prefix}@WO`), { ids: [atName.userId], total: 1 }, 'by its prefix, any case')
  t.same(await ids(owner.email.toUpperCase()), { ids: [owner.userId, lookalike.userId], total: 2 }, 'the address owner first, then the names')
  t.same(await ids(owner.email, '&limit=1'), { ids: [owner.userId], total: 2 }, 'a page of one: the address owner')
  t.same(await ids(owner.email, '&limit=1&page=2'), { ids: [lookalike.userId], total: 2 }, 'page two: the name')
  t.same(await ids(owner.email.slice(0, -2)), { ids: [lookalike.userId], total: 1 }, 'an address prefix finds only names, never the address')
  const rpc = await searcher.rpc(UsersService).searchUsers({ query: owner.email })
  t.same(rpc.users.map((u) => u.id), [owner.userId, lookalike.userId], 'RPC: the same')
  t.ok(rpc.users.every((u) => u.email === ''), 'no addresses in results')
})

t.test('GET /api/users/display-info?ids=: GetDisplayInfo on REST, by the same rules', async (t) => {
  const viewer = await signInPerson(s, 'rest-viewer')
  const a = await signInPerson(s, 'rest-info-a')
  const b = await signInPerson(s, 'rest-info-b')
  await b.rest('PATCH', '/api/users/me', { displayName: 'Bea' })
  const res = await viewer.rest('GET', `/api/users/display-info?ids=${b.userId},unknown,${a.userId},${b.userId}`)
  t.equal(res.statusCode, 200)
  t.same(res.json().data.map((u: { id: string, displayName: string }) => [u.id, u.displayName]), [[b.userId, 'Bea'], [a.userId, a.email.split('@')[0]]], 'in the order asked, unknown left out, once each')
  t.notOk(res.json().data.some((u: object) => 'email' in u), 'no addresses')
  const rpc = await viewer.rpc(UsersService).getDisplayInfo({ userIds: [b.userId, 'unknown', a.userId] })
  t.same(res.json().data, (plain(rpc.users) as Array<Record<string, unknown>>).map(({ email: _email, ...rest }) => rest), 'the same users as RPC')
  t.same((await viewer.rest('GET', '/api/users/display-info?ids=')).json(), { data: [] }, 'an empty list')
  const hundred = Array.from({ length: 100 }, (_, i) => i === 0 ? a.userId : `missing-${i}`)
  t.equal((await viewer.rest('GET', `/api/users/display-info?ids=${hundred.join(',')}`)).json().data.length, 1, '100 ids')
  for (const [label, query] of [['101 ids', `ids=${[...hundred, 'one-more'].join(',')}`], ['no ids', ''], ['an empty id', `ids=${a.userId},,x`], ['a 201-character id', `ids=${'x'.repeat(201)}`], ['1 MB', `ids=${'x,'.repeat(500_000)}`]]) {
    const refused = await viewer.rest('GET', `/api/users/display-info?${query}`)
    t.equal(refused.statusCode, 400, label)
    t.equal(refused.json().details?.[0]?.field, 'ids', `${label}: names ids`)
  }
  t.equal((await anonymousRest(s)('GET', `/api/users/display-info?ids=${a.userId}`)).statusCode, 401, 'Required')
})

t.test('GetDisplayInfo: up to 100 ids in one call, in the order asked, unknown ids left out', async (t) => {
  const viewer = await signInPerson(s, 'viewer')
  const a = await signInPerson(s, 'info-a')
  const b = await signInPerson(s, 'info-b')
  await b.rest('PATCH', '/api/users/me', { displayName: 'Bee' })
  const answer = await viewer.rpc(UsersService).getDisplayInfo({ userIds: [b.userId, 'unknown', a.userId, b.userId] })
  t.same(answer.users.map((u) => [u.id, u.displayName, u.email]), [[b.userId, 'Bee', ''], [a.userId, a.email.split('@')[0], '']])
  t.same((await viewer.rpc(UsersService, { binary: true }).getDisplayInfo({ userIds: [] })).users, [])
  const hundred = Array.from({ length: 100 }, (_, i) => i === 0 ? a.userId : `missing-${i}`)
  t.equal((await viewer.rpc(UsersService).getDisplayInfo({ userIds: hundred })).users.length, 1)
  const tooMany = await rpcError(viewer.rpc(UsersService).getDisplayInfo({ userIds: [...hundred, 'one-more'] }))
  t.equal(tooMany.code, Code.InvalidArgument)
  t.match(tooMany.rawMessage, /userIds/)
  t.equal((await rpcError(viewer.rpc(UsersService).getDisplayInfo({ userIds: ['x'.repeat(201)] }))).code, Code.InvalidArgument)
})

t.test('a new user\'s display name is the local part of their address', async (t) => {
  const email = uniqueEmail('Local.Part')
  const person = await signInPerson(s, 'local', email)
  t.equal((await person.rest('GET', '/api/auth/me')).json().data.displayName, email.split('@')[0]?.toLowerCase())
})

t.test('a search pages through the first 1,000 matches only, and says so in its total', async (t) => {
  const database = await openDatabase({ databaseUrl: undefined, dataDir: migratedDataDir() })
  const many = await startApp({ DATABASE_URL: undefined, REDIS_URL: undefined }, { database, rateLimit: { maxOverride: { read: unlimited, standard: unlimited, strict: unlimited } } })
  t.teardown(async () => { await many.close(); await database.close() })
  const now = new Date()
  await database.db.insertInto('users').values(Array.from({ length: 1005 }, (_, i) => ({
    id: `user_many_${i}`, email: `many-${i}@example.test`, display_name: `Manyname ${String(i).padStart(4, '0')}`, search_key: `manyname ${String(i).padStart(4, '0')}`, created_at: now, updated_at: now
  }))).execute()
  const viewer = await signInPerson(many, 'viewer')
  const first = (await viewer.rest('GET', '/api/users?q=many&limit=100')).json()
  t.same(first.pagination, { page: 1, limit: 100, total: 1000, totalPages: 10 })
  t.equal(first.data[0].displayName, 'Manyname 0000')
  const last = (await viewer.rest('GET', '/api/users?q=many&limit=100&page=10')).json()
  t.equal(last.data.length, 100)
  t.equal(last.data[99].displayName, 'Manyname 0999')
  const beyond = (await viewer.rest('GET', '/api/users?q=many&limit=100&page=11')).json()
  t.same(beyond, { data: [], pagination: { page: 11, limit: 100, total: 1000, totalPages: 10 } })
  t.equal((await viewer.rest('GET', '/api/users?q=manyname%2001&limit=100')).json().pagination.total, 100, 'a longer query narrows it')
})

t.test('POST /api/users/avatar stores an image and shows it on the profile; avatarUrl accepts only one\'s own avatars', async (t) => {
  const client = uploadClient(s)
  const gina = await signInPerson(s, 'gina')
  const hank = await signInPerson(s, 'hank')
  const set = await client.post(gina.cookie, formOf({ filename: 'me.png', content: SAMPLES.png }), '/api/users/avatar')
  t.equal(set.status, 200)
  const user = set.json().data as { id: string, email: string, avatarUrl: string }
  t.equal(user.id, gina.userId)
  t.equal(user.email, gina.email, 'answers the caller\'s User')
  t.match(user.avatarUrl, new RegExp(`^${s.config.appUrl}/api/uploads/file_`))
  const served = await client.get(undefined, user.avatarUrl)
  t.equal(served.status, 200, 'avatars are public')
  t.equal(served.headers.get('content-type'), 'image/png')
  t.equal((await hank.rest('GET', `/api/users/${gina.userId}`)).json().data.avatarUrl, user.avatarUrl, 'others see it')
  t.equal((await gina.rest('GET', '/api/auth/me')).json().data.avatarUrl, user.avatarUrl, '/me at once')

  const notImage = await client.post(gina.cookie, formOf({ filename: 'x.png', content: SAMPLES.text }), '/api/users/avatar')
  t.equal(notImage.status, 400)
  t.equal(notImage.json().details?.[0]?.field, 'file')
  t.equal((await gina.rest('GET', '/api/auth/me')).json().data.avatarUrl, user.avatarUrl, 'a refused avatar changes nothing')
  t.equal((await client.post(undefined, formOf({ filename: 'me.png', content: SAMPLES.png }), '/api/users/avatar')).status, 401)
  t.equal((await gina.rest('POST', '/api/users/avatar', { file: 'x' })).statusCode, 415, 'JSON is not a form')
  t.equal((await gina.rest('PATCH', '/api/users/me', { avatarUrl: 'x' })).statusCode, 400)

  // Through PATCH: one's own avatar upload, not someone else's, not an attachment.
  const hanks = (await client.post(hank.cookie, formOf(['type', 'avatar'], { filename: 'h.png', content: SAMPLES.png }))).json().data as { url: string }
  const ginasAttachment = (await client.post(gina.cookie, formOf({ filename: 'a.png', content: SAMPLES.png }), '/api/attachments')).json().data as { url: string }
  const ginasSecond = (await client.post(gina.cookie, formOf(['type', 'avatar'], { filename: 'g2.gif', content: SAMPLES.gif }))).json().data as { url: string }
  for (const [label, avatarUrl] of [['another user\'s avatar', hanks.url], ['an attachment', ginasAttachment.url]] as const) {
    const res = await gina.rest('PATCH', '/api/users/me', { avatarUrl })
    t.equal(res.statusCode, 400, label)
    t.equal(res.json().details?.[0]?.field, 'avatarUrl')
  }
  t.equal((await gina.rpc(UsersService).updateProfile({ avatarUrl: ginasSecond.url })).user?.avatarUrl, ginasSecond.url, 'RPC: own avatar upload')
})
