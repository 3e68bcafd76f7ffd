// Storage bounds (issue 26 item 4, DECISIONS §16) on local disk, through real HTTP: UPLOAD_QUOTA_BYTES
// (413 QuotaExceeded, nothing kept, parallel uploads near the quota never both pass), avatar clean-up
// (a replaced or cleared avatar's file goes; deleting the avatar upload clears the profile, on both
// transports), bytes removed only after the commit, the sweep of bytes no row refers to, and the
// free-space reserve that keeps uploads from filling the embedded database's disk. Runs on embedded
// PGlite and, with DATABASE_URL, on Postgres, where the parallel uploads really race.
import t from 'tap'
import { readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { UsersService } from '../src/gen/app/users/v1/users_pb.js'
import { sweepUnreferencedBytes } from '../src/core/uploads/upload-sweep.js'
import { startApp, type TestApp } from './helpers/app.js'
import { signInPerson, type Person } from './helpers/people.js'
import { formOf, pngOfSize, SAMPLES, uploadClient } from './helpers/uploads.js'

const MiB = 1024 * 1024
const QUOTA = 3 * MiB
const s = await startApp({ UPLOAD_QUOTA_BYTES: String(QUOTA) })
t.teardown(s.close)
const client = uploadClient(s)
const uploadsDir = join(s.config.dataDir, 'uploads')

function stored (): string[] {
  return readdirSync(uploadsDir).filter((name) => name !== '.partial').sort()
}

function partials (): string[] {
  return readdirSync(join(uploadsDir, '.partial'))
}

const person = async (label: string): Promise<Person> => await signInPerson(s, label)

async function attach (who: Person, size: number, app: TestApp = s): Promise<{ status: number, json: () => { data?: Record<string, unknown>, error?: string, details?: Array<{ field: string, issue: string }> } }> {
  return await uploadClient(app).post(who.cookie, formOf({ filename: 'one.bin', content: pngOfSize(size) }), '/api/attachments')
}

async function avatar (who: Person, content: Buffer = SAMPLES.png): Promise<Record<string, unknown>> {
  const res = await client.post(who.cookie, formOf({ filename: 'me.png', content }), '/api/users/avatar')
  if (res.status !== 200) throw new Error(`avatar upload: ${res.status} ${res.body.toString()}`)
  return res.json().data!
}

/** A sweep as if run `hoursLater` from now (the grace period is an hour), forced past its period. */
async function sweep (app: TestApp, hoursLater: number): Promise<number | undefined> {
  const later = new Date(Date.now() + hoursLater * 3600_000)
  return await sweepUnreferencedBytes({ ...app.app.deps, clock: { now: () => later } }, { force: true })
}

t.test('six 1 MiB attachments where the quota is 3 MiB: three kept, three refused with 413 QuotaExceeded, nothing of them kept', async (t) => {
  const alice = await person('quota')
  const before = stored()
  const answers = []
  for (let i = 0; i < 6; i++) answers.push(await attach(alice, MiB))
  t.same(answers.map((a) => a.status), [201, 201, 201, 413, 413, 413])
  const refusal = answers[3]!.json()
  t.equal(refusal.error, 'QuotaExceeded')
  t.equal(refusal.details?.[0]?.field, 'file')
  t.match(refusal.details?.[0]?.issue, /quota of 3 MiB \(3 MiB used\)/)
  t.equal(stored().length, before.length + 3, 'only the three accepted files are on disk')
  t.same(partials(), [], 'no partial file left')

  // Deleting one makes room for one more.
  const first = answers[0]!.json().data!
  t.equal((await client.delete(alice.cookie, String(first.url))).status, 204)
  t.equal((await attach(alice, MiB)).status, 201, 'room again after a delete')
  t.equal((await attach(alice, 1)).status, 413, 'and full again')
})

t.test('a file that passes the quota part-way is refused as it streams (413 QuotaExceeded), nothing kept', async (t) => {
  const bob = await person('quota-stream')
  t.equal((await attach(bob, 2 * MiB)).status, 201)
  const before = stored()
  const over = await attach(bob, 2 * MiB)
  t.equal(over.status, 413)
  t.equal(over.json().error, 'QuotaExceeded')
  t.same(stored(), before)
  t.same(partials(), [])
  t.equal((await attach(bob, MiB)).status, 201, 'what still fits is taken')
})

t.test('parallel uploads near the quota: never more than the quota kept (on Postgres they race)', async (t) => {
  const carol = await person('quota-race')
  const before = new Set(stored())
  const answers = await Promise.all(Array.from({ length: 6 }, async () => await attach(carol, MiB)))
  const statuses = answers.map((a) => a.status).sort()
  t.same(statuses, [201, 201, 201, 413, 413, 413], 'exactly three of six 1 MiB uploads fit in 3 MiB')
  t.ok(answers.filter((a) => a.status === 413).every((a) => a.json().error === 'QuotaExceeded'))
  const added = stored().filter((name) => !before.has(name))
  t.same(added.sort(), answers.filter((a) => a.status === 201).map((a) => String(a.json().data!.id)).sort(), 'the refused ones left no bytes')
  const row = await s.app.deps.db.selectFrom('users').select('upload_bytes').where('id', '=', carol.userId).executeTakeFirstOrThrow()
  t.equal(Number(row.upload_bytes), 3 * MiB, 'the user\'s total is what is kept')
})

t.test('replacing an avatar deletes the old file (its URL 404), on both transports; clearing it too', async (t) => {
  const dave = await person('avatar-replace')
  const first = await avatar(dave)
  const second = await avatar(dave, SAMPLES.gif)
  t.not(first.avatarUrl, second.avatarUrl)
  t.equal((await client.get(undefined, String(first.avatarUrl))).status, 404, 'the replaced avatar is gone')
  t.notOk(stored().includes(String(String(first.avatarUrl).split('/').at(-1))), 'its bytes too')
  t.equal((await client.get(undefined, String(second.avatarUrl))).status, 200)

  // An avatar uploaded apart and set by RPC UpdateProfile replaces the current one the same way.
  const third = (await client.post(dave.cookie, formOf(['type', 'avatar'], { filename: 'c.png', content: SAMPLES.png }))).json().data!
  const viaRpc = await dave.rpc(UsersService, { binary: true }).updateProfile({ avatarUrl: String(third.url) })
  t.equal(viaRpc.user?.avatarUrl, third.url)
  t.equal((await client.get(undefined, String(second.avatarUrl))).status, 404, 'replaced over RPC: gone')

  // Setting the same avatar again keeps it; clearing deletes it.
  t.equal((await dave.rest('PATCH', '/api/users/me', { avatarUrl: String(third.url) })).statusCode, 200)
  t.equal((await client.get(undefined, String(third.url))).status, 200, 'set again: kept')
  const cleared = await dave.rest('PATCH', '/api/users/me', { avatarUrl: '' })
  t.equal(cleared.json().data.avatarUrl, '')
  t.equal((await client.get(undefined, String(third.url))).status, 404, 'cleared: gone')
  const row = await s.app.deps.db.selectFrom('users').select('upload_bytes').where('id', '=', dave.userId).executeTakeFirstOrThrow()
  t.equal(Number(row.upload_bytes), 0, 'the replaced avatars no longer count against the quota')
})

t.test('deleting the upload that is the current avatar clears the avatar (REST and RPC see it)', async (t) => {
  const erin = await person('avatar-delete')
  const viewer = await person('avatar-viewer')
  const shown = await avatar(erin)
  const fileId = String(shown.avatarUrl).split('/').at(-1)!
  t.equal((await viewer.rest('GET', `/api/users/${erin.userId}`)).json().data.avatarUrl, shown.avatarUrl)
  t.equal((await client.delete(erin.cookie, `/api/uploads/${fileId}`)).status, 204)
  t.equal((await client.get(undefined, String(shown.avatarUrl))).status, 404)
  t.equal((await viewer.rest('GET', `/api/users/${erin.userId}`)).json().data.avatarUrl, '', 'REST: no avatar')
  t.equal((await erin.rest('GET', '/api/auth/me')).json().data.avatarUrl, '', 'the owner\'s /me at once')
  t.equal((await viewer.rpc(UsersService).getUser({ userId: erin.userId })).user?.avatarUrl, '', 'RPC: no avatar')

  // An avatar upload that is not the profile's picture is deleted without touching the profile.
  const current = await avatar(erin)
  const spare = (await client.post(erin.cookie, formOf(['type', 'avatar'], { filename: 's.png', content: SAMPLES.png }))).json().data!
  t.equal((await client.delete(erin.cookie, String(spare.url))).status, 204)
  t.equal((await erin.rest('GET', '/api/auth/me')).json().data.avatarUrl, current.avatarUrl)
})

t.test('the sweep removes bytes no row refers to once older than the grace period, and nothing else', async (t) => {
  const fred = await person('sweep')
  const kept = (await attach(fred, 10)).json().data!
  const orphan = 'file_orphanNeverCommitted1'
  writeFileSync(join(uploadsDir, orphan), 'bytes whose row never committed')
  writeFileSync(join(uploadsDir, 'operator-notes.txt'), 'not ours')

  t.equal(await sweep(s, 0), 0, 'younger than the grace period: left alone')
  t.ok(stored().includes(orphan))
  const removed = await sweep(s, 2)
  t.ok(removed !== undefined && removed >= 1)
  t.notOk(stored().includes(orphan), 'the orphan is gone')
  t.ok(stored().includes(String(kept.id)), 'a file with its row stays')
  t.ok(stored().includes('operator-notes.txt'), 'a file that is not an upload key stays')
  t.equal((await client.get(fred.cookie, String(kept.url))).status, 200)

  // Unforced, at the same moment, the period's sweep has run already (claimed above): another
  // instance would not sweep now.
  const sameMoment = new Date(Date.now() + 2 * 3600_000)
  t.equal(await sweepUnreferencedBytes({ ...s.app.deps, clock: { now: () => sameMoment } }), undefined)
})

t.test('a delete while storage fails still answers 204: the row goes first, the bytes are swept later', async (t) => {
  const gina = await person('delete-outage')
  const file = (await attach(gina, 10)).json().data!
  const aside = `${uploadsDir}.aside`
  renameSync(uploadsDir, aside)
  writeFileSync(uploadsDir, 'not a directory')
  try {
    t.equal((await client.delete(gina.cookie, String(file.url))).status, 204, 'storage is only called after the commit')
  } finally {
    rmSync(uploadsDir)
    renameSync(aside, uploadsDir)
  }
  t.equal((await client.get(gina.cookie, String(file.url))).status, 404, 'the upload is gone')
  t.ok(stored().includes(String(file.id)), 'its bytes stayed behind')
  await sweep(s, 2)
  t.notOk(stored().includes(String(file.id)), 'the sweep removes them')
})

t.test('local disk keeps UPLOAD_DISK_RESERVE_BYTES free for the embedded database: below it uploads are 503', async (t) => {
  const full = await startApp({ UPLOAD_DISK_RESERVE_BYTES: String(Number.MAX_SAFE_INTEGER) })
  t.teardown(full.close)
  const hank = await signInPerson(full, 'disk-full')
  const res = await attach(hank, 10, full)
  t.equal(res.status, 503)
  t.match(res.json(), { error: 'ServiceUnavailable', message: 'File storage is full; try again later.', requestId: String }, 'the envelope, with the request id to quote (DECISIONS §15)')
  t.same(readdirSync(join(full.config.dataDir, 'uploads')).filter((n) => n !== '.partial'), [], 'nothing stored')
})
