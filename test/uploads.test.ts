// Uploads on local disk (issue 21 item 2, DECISIONS §9), through real HTTP: storing avatars and
// attachments, the headers they are served with, who may read and delete them, every kind of bad
// upload answered with a clear 4xx and nothing left in storage, storage failing (503), and account
// deletion taking the files along. Runs on embedded PGlite and, with DATABASE_URL, on Postgres.
import t from 'tap'
import { readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startApp } from './helpers/app.js'
import { signInPerson, type Person } from './helpers/people.js'
import { FILENAME_MAX, sanitiseFilename } from '../src/core/uploads/filename.js'
import { deleteAccount, eventually, formOf, multipartBytes, pngOfSize, rawUpload, SAMPLES, uploadClient } from './helpers/uploads.js'

const MiB = 1024 * 1024
const s = await startApp()
t.teardown(s.close)
const client = uploadClient(s)
const uploadsDir = join(s.config.dataDir, 'uploads')

/** Files in storage: the stored ones, and any partial one still being written. */
function storage (): { stored: string[], partial: string[] } {
  return {
    stored: readdirSync(uploadsDir).filter((name) => name !== '.partial').sort(),
    partial: readdirSync(join(uploadsDir, '.partial'))
  }
}

/** Each person has the upload tier's 20 a minute to themselves. */
const person = async (label: string): Promise<Person> => await signInPerson(s, label)

t.test('an avatar: stored by its bytes, whatever the client claims, and served to anyone', async (t) => {
  const alice = await person('avatar')
  const res = await client.post(alice.cookie, formOf(['type', 'avatar'], { filename: '../../etc/Me\u202Egnp.png', content: SAMPLES.png, type: 'text/plain' }))
  t.equal(res.status, 201)
  const file = res.json().data!
  t.match(file, { filename: 'Megnp.png', size: SAMPLES.png.length, mimeType: 'image/png', kind: 'avatar' })
  t.match(file.id, /^file_/)
  t.equal(file.url, `http://app.test/api/uploads/${String(file.id)}`, 'url is APP_URL/api/uploads/<id>')
  t.same(readFileSync(join(uploadsDir, String(file.id))), SAMPLES.png, 'the bytes are on disk under the id')

  const served = await client.get(undefined, String(file.url))
  t.equal(served.status, 200, 'anyone may read an avatar')
  t.same(served.body, SAMPLES.png)
  t.equal(served.headers.get('content-type'), 'image/png')
  t.equal(served.headers.get('content-length'), String(SAMPLES.png.length))
  t.equal(served.headers.get('x-content-type-options'), 'nosniff')
  t.equal(served.headers.get('content-security-policy'), "default-src 'none'; sandbox")
  t.equal(served.headers.get('content-disposition'), 'inline; filename="Megnp.png"; filename*=UTF-8\'\'Megnp.png')
  t.equal(served.headers.get('cache-control'), 'public, max-age=86400')
  const etag = served.headers.get('etag')
  t.equal(etag, `"${String(file.id)}"`)

  const revalidated = await client.get(undefined, String(file.url), { 'if-none-match': `W/"other", ${etag ?? ''}` })
  t.equal(revalidated.status, 304)
  t.equal(revalidated.body.length, 0)
  t.equal(revalidated.headers.get('etag'), etag)
  t.equal(revalidated.headers.get('cache-control'), 'public, max-age=86400')
  t.equal((await client.get(undefined, String(file.url), { 'if-none-match': '"stale"' })).status, 200, 'another ETag gets the file')

  const head = await client.get(undefined, String(file.url), {}, 'HEAD')
  t.equal(head.status, 200)
  t.equal(head.headers.get('content-length'), String(SAMPLES.png.length), 'HEAD tells the length, sends no body')
  t.equal(head.body.length, 0)

  for (const [format, content] of [['jpeg', SAMPLES.jpeg], ['gif', SAMPLES.gif], ['webp', SAMPLES.webp]] as const) {
    const other = await client.post(alice.cookie, formOf(['type', 'avatar'], { filename: `me.${format}`, content, type: 'image/png' }))
    t.equal(other.status, 201, format)
    t.equal(other.json().data?.mimeType, `image/${format}`)
  }
})

t.test('attachments: served to signed-in users only, as downloads unless they are images', async (t) => {
  const owner = await person('attach')
  const reader = await person('reader')
  const viaAttachments = await client.post(owner.cookie, formOf({ filename: 'résumé (final).pdf', content: SAMPLES.pdf, type: 'image/png' }), '/api/attachments')
  t.equal(viaAttachments.status, 201, 'POST /api/attachments takes a file alone')
  const pdf = viaAttachments.json().data!
  t.equal((await client.post(owner.cookie, formOf(['type', 'attachment'], { filename: 'a.txt', content: SAMPLES.text }), '/api/attachments')).status, 201, 'and a type that repeats its kind')
  const conflicting = await client.post(owner.cookie, formOf(['type', 'avatar'], { filename: 'a.png', content: SAMPLES.png }), '/api/attachments')
  t.equal(conflicting.status, 400)
  t.same(conflicting.json().details, [{ field: 'type', issue: 'must be attachment here, or left out' }])
  t.match(pdf, { mimeType: 'application/pdf', kind: 'attachment', filename: 'résumé (final).pdf' })

  const anonymous = await client.get(undefined, String(pdf.url))
  t.equal(anonymous.status, 401)
  t.same(anonymous.json(), { error: 'Unauthorized', message: 'Sign in to continue.' })
  t.equal(anonymous.headers.get('content-disposition'), null, 'no file headers on a refusal')

  const read = await client.get(reader.cookie, String(pdf.url))
  t.equal(read.status, 200, 'any signed-in user may read an attachment')
  t.same(read.body, SAMPLES.pdf)
  t.equal(read.headers.get('content-type'), 'application/pdf')
  t.equal(read.headers.get('content-disposition'), 'attachment; filename="r_sum_ (final).pdf"; filename*=UTF-8\'\'r%C3%A9sum%C3%A9%20%28final%29.pdf')
  t.equal(read.headers.get('cache-control'), 'private, max-age=3600')
  t.equal(read.headers.get('x-content-type-options'), 'nosniff')
  t.equal(read.headers.get('content-security-policy'), "default-src 'none'; sandbox")

  // Formats that can carry script are never shown inline: SVG (with or without an XML prolog), HTML.
  const cases: Array<[string, Buffer, string]> = [
    ['notes.txt', SAMPLES.text, 'application/octet-stream'],
    ['page.html', SAMPLES.html, 'application/octet-stream'],
    ['logo.svg', SAMPLES.svg, 'application/octet-stream'],
    ['logo2.svg', SAMPLES.xmlSvg, 'application/xml'],
    ['photo.png', SAMPLES.png, 'image/png']
  ]
  for (const [filename, content, mimeType] of cases) {
    const res = await client.post(owner.cookie, formOf(['type', 'attachment'], { filename, content, type: 'image/svg+xml' }))
    t.equal(res.status, 201, filename)
    t.equal(res.json().data?.mimeType, mimeType, `${filename}: typed by its bytes`)
    const served = await client.get(reader.cookie, String(res.json().data?.url))
    t.equal(served.headers.get('content-type'), mimeType, filename)
    t.match(served.headers.get('content-disposition'), mimeType === 'image/png' ? /^inline;/ : /^attachment;/, filename)
  }
})

t.test('delete: owner only (204); to anyone else the file does not exist', async (t) => {
  const owner = await person('deleter')
  const other = await person('other')
  const file = (await client.post(owner.cookie, formOf(['type', 'attachment'], { filename: 'a.txt', content: SAMPLES.text }))).json().data!
  t.equal((await client.delete(undefined, String(file.url))).status, 401)
  const byOther = await client.delete(other.cookie, String(file.url))
  t.equal(byOther.status, 404)
  t.equal(byOther.json().error, 'NotFound')
  t.ok(storage().stored.includes(String(file.id)), 'still stored')
  const byOwner = await client.delete(owner.cookie, String(file.url))
  t.equal(byOwner.status, 204)
  t.equal(byOwner.body.length, 0)
  t.notOk(storage().stored.includes(String(file.id)), 'its bytes are gone')
  t.equal((await client.get(owner.cookie, String(file.url))).status, 404)
  t.equal((await client.delete(owner.cookie, String(file.url))).status, 404, 'deleting twice: gone')
  t.equal((await client.get(owner.cookie, '/api/uploads/file_doesnotexist')).status, 404)
})

t.test('bad uploads: each a clear 4xx in the envelope naming the problem, nothing kept', async (t) => {
  const user = await person('bad')
  const before = storage()
  const cases: Array<[string, FormData | string, number, string, string | undefined]> = [
    ['no file', formOf(['type', 'attachment']), 400, 'ValidationError', 'file'],
    ['no type', formOf({ filename: 'a.txt', content: SAMPLES.text }), 400, 'ValidationError', 'type'],
    ['no parts at all', formOf(), 400, 'ValidationError', 'type'],
    ['type after the file', formOf({ filename: 'a.txt', content: SAMPLES.text }, ['type', 'attachment']), 400, 'ValidationError', 'type'],
    ['a wrong type', formOf(['type', 'banner'], { filename: 'a.png', content: SAMPLES.png }), 400, 'ValidationError', 'type'],
    ['type twice', formOf(['type', 'avatar'], ['type', 'attachment'], { filename: 'a.png', content: SAMPLES.png }), 400, 'ValidationError', 'type'],
    ['an empty file', formOf(['type', 'attachment'], { filename: 'empty.txt', content: Buffer.alloc(0) }), 400, 'ValidationError', 'file'],
    ['text named x.png as an avatar', formOf(['type', 'avatar'], { filename: 'x.png', content: SAMPLES.text, type: 'image/png' }), 400, 'ValidationError', 'file'],
    ['an SVG as an avatar', formOf(['type', 'avatar'], { filename: 'x.svg', content: SAMPLES.xmlSvg, type: 'image/svg+xml' }), 400, 'ValidationError', 'file'],
    ['a PDF as an avatar', formOf(['type', 'avatar'], { filename: 'x.jpg', content: SAMPLES.pdf, type: 'image/jpeg' }), 400, 'ValidationError', 'file'],
    ['two files', formOf(['type', 'attachment'], { filename: 'a.txt', content: SAMPLES.text }, { filename: 'b.txt', content: SAMPLES.text }), 400, 'ValidationError', 'file'],
    ['the file under another name', formOf(['type', 'attachment'], { name: 'document', filename: 'a.txt', content: SAMPLES.text }), 400, 'ValidationError', 'document'],
    ['an unknown field', formOf(['type', 'attachment'], ['note', 'hi'], { filename: 'a.txt', content: SAMPLES.text }), 400, 'ValidationError', 'note'],
    ['JSON', JSON.stringify({ type: 'avatar', file: 'aGVsbG8=' }), 415, 'UnsupportedMediaType', undefined]
  ]
  for (const [label, body, status, error, field] of cases) {
    const res = await client.post(user.cookie, body, '/api/uploads', typeof body === 'string' ? { 'content-type': 'application/json' } : {})
    t.equal(res.status, status, `${label}: ${status}`)
    t.equal(res.json().error, error, label)
    t.type(res.json().message, 'string', label)
    if (field !== undefined) t.ok(res.json().details?.some((d) => d.field === field), `${label}: names ${field} (${res.json().message ?? ''})`)
  }
  t.match((await client.post(user.cookie, formOf(['type', 'attachment'], { filename: 'a.txt', content: Buffer.alloc(0) }))).json().message, /file: must not be empty/)
  t.match((await client.post(user.cookie, formOf(['type', 'avatar'], { filename: 'x.png', content: SAMPLES.text }))).json().message, /must be a PNG, JPEG, WebP or GIF image by its content/)

  const other = await person('bad-type') // the upload tier allows 20 a minute per user

  for (const [label, headers, body] of [
    ['plain text', { 'content-type': 'text/plain' }, 'hello'],
    ['a url-encoded form', { 'content-type': 'application/x-www-form-urlencoded' }, 'type=avatar&file=x'],
    ['no content type', {}, Buffer.from('hello')],
    ['multipart without a boundary', { 'content-type': 'multipart/form-data' }, 'hello']
  ] as const) {
    const res = await client.post(other.cookie, body, '/api/uploads', headers)
    t.ok(res.status === 415 || res.status === 400, `${label}: ${res.status} ${res.body.toString()}`)
    t.type(res.json().error, 'string')
  }
  const empty = await s.app.inject({ method: 'POST', url: '/api/uploads', cookies: { app_session: other.cookie } })
  t.equal(empty.statusCode, 415, 'no body at all')
  t.match(empty.json().message, /multipart\/form-data/)
  t.same(storage(), before, 'nothing was kept')
})

t.test('too large: 413 PayloadTooLarge while streaming, the partial file removed', async (t) => {
  const user = await person('large')
  const before = storage()
  const avatar = await client.post(user.cookie, formOf(['type', 'avatar'], { filename: 'big.png', content: pngOfSize(5 * MiB + 1) }))
  t.equal(avatar.status, 413)
  t.same(avatar.json(), { error: 'PayloadTooLarge', message: 'file: must be at most 5 MiB', details: [{ field: 'file', issue: 'must be at most 5 MiB' }] })
  const attachment = await client.post(user.cookie, formOf({ filename: 'big.bin', content: Buffer.alloc(25 * MiB + 1, 1) }), '/api/attachments')
  t.equal(attachment.status, 413)
  t.equal(attachment.json().message, 'file: must be at most 25 MiB')
  // A body that declares itself too large is refused before it is read.
  const declared = await client.post(user.cookie, formOf(['type', 'attachment'], { filename: 'huge.bin', content: Buffer.alloc(30 * MiB) }))
  t.equal(declared.status, 413)
  t.match(declared.json().message, /must be at most 25 MiB/)
  // A chunked body (no Content-Length) is measured as it streams too.
  const { body, contentType } = multipartBytes(['type', 'avatar'], { filename: 'chunked.png', content: pngOfSize(6 * MiB) })
  const chunked = await fetch(`${s.url}/api/uploads`, { method: 'POST', headers: { 'content-type': contentType, cookie: `app_session=${user.cookie}` }, body: new Blob([new Uint8Array(body)]).stream(), duplex: 'half' } as RequestInit)
  t.equal(chunked.status, 413)
  t.same(storage(), before, 'nothing kept, no partial file')

  // Exactly at the limit is fine.
  const atLimit = await client.post(user.cookie, formOf(['type', 'avatar'], { filename: 'exact.png', content: pngOfSize(5 * MiB) }))
  t.equal(atLimit.status, 201)
  t.equal(atLimit.json().data?.size, 5 * MiB)
  const full = await client.post(user.cookie, formOf({ filename: 'full.bin', content: Buffer.alloc(25 * MiB, 7) }), '/api/attachments')
  t.equal(full.status, 201)
  const served = await client.get(user.cookie, String(full.json().data?.url))
  t.equal(served.body.length, 25 * MiB)
  t.ok(served.body.every((byte) => byte === 7), 'served back whole')
})

t.test('a cut-off body, a dropped connection, a stalled client: no file, no partial file, no handler left', async (t) => {
  const user = await person('broken')
  const before = storage()
  const { body, contentType } = multipartBytes(['type', 'attachment'], { filename: 'cut.bin', content: Buffer.alloc(2 * MiB, 3) })

  // The declared length arrives, but the form stops in the middle of the file (no closing boundary).
  const truncated = await rawUpload(s, { cookie: user.cookie, contentType, body, send: MiB, then: 'end' })
  t.equal(truncated.status, 400, `truncated multipart: ${truncated.body}`)
  t.match(JSON.parse(truncated.body), { error: 'ValidationError', details: [{ field: 'file' }] })
  // The form ends before any file: the parser's own error.
  const headerOnly = await rawUpload(s, { cookie: user.cookie, contentType, body, send: 60, then: 'end' })
  t.equal(headerOnly.status, 400, `cut in a field: ${headerOnly.body}`)
  t.equal(JSON.parse(headerOnly.body).error, 'BadRequest')

  // The client goes away mid-file.
  const dropped = await rawUpload(s, { cookie: user.cookie, contentType, body, send: MiB, then: 'drop' })
  t.ok(dropped.closed)
  t.ok(await eventually(() => s.app.core.uploads.receiving() === 0), 'the upload handler finished')
  t.same(storage(), before, 'nothing kept')

  // The service still answers the same user.
  const after = await client.post(user.cookie, formOf(['type', 'attachment'], { filename: 'fine.txt', content: SAMPLES.text }))
  t.equal(after.status, 201)
})

t.test('a client that stalls mid-upload is cut at the request timeout, leaving nothing', async (t) => {
  const stall = await startApp({ HTTP_REQUEST_TIMEOUT_MS: '1500', HTTP_HEADERS_TIMEOUT_MS: '1000' })
  t.teardown(stall.close)
  const user = await signInPerson(stall, 'stall')
  const dir = join(stall.config.dataDir, 'uploads')
  const { body, contentType } = multipartBytes(['type', 'attachment'], { filename: 'slow.bin', content: Buffer.alloc(MiB, 5) })
  const outcome = await rawUpload(stall, { cookie: user.cookie, contentType, body, send: 100_000, then: 'wait', waitMs: 8_000 })
  t.ok(outcome.status === 408 || outcome.closed, `answered 408 or closed: ${String(outcome.status)}`)
  t.ok(await eventually(() => stall.app.core.uploads.receiving() === 0), 'the upload handler finished')
  t.same(readdirSync(dir).filter((n) => n !== '.partial'), [])
  t.same(readdirSync(join(dir, '.partial')), [])
})

t.test('refused before the body is read: anonymous 401, the 21st upload of a minute 429', async (t) => {
  const { body, contentType } = multipartBytes(['type', 'attachment'], { filename: 'never.bin', content: Buffer.alloc(20 * MiB) })
  // Only the headers go out; the answer comes without waiting for the 20 MiB.
  const anonymous = await rawUpload(s, { contentType, body, send: 0, then: 'wait', waitMs: 5_000 })
  t.equal(anonymous.status, 401)
  t.same(JSON.parse(anonymous.body), { error: 'Unauthorized', message: 'Sign in to continue.' })
  t.equal((await rawUpload(s, { contentType, body, send: 0, then: 'wait', waitMs: 5_000, path: '/api/attachments' })).status, 401)

  const busy = await person('busy')
  const statuses: number[] = []
  for (let i = 0; i < 20; i++) statuses.push((await client.post(busy.cookie, formOf(['type', 'attachment'], { filename: `n${i}.txt`, content: SAMPLES.text }))).status)
  t.same(statuses, Array(20).fill(201), 'the upload tier allows 20 a minute')
  const limited = await rawUpload(s, { cookie: busy.cookie, contentType, body, send: 0, then: 'wait', waitMs: 5_000 })
  t.equal(limited.status, 429)
  t.equal(JSON.parse(limited.body).error, 'Rate limit exceeded')
  const attach = await client.post(busy.cookie, formOf({ filename: 'x.txt', content: SAMPLES.text }), '/api/attachments')
  t.equal(attach.status, 429, 'POST /api/attachments counts in the same tier')
  t.equal(attach.headers.get('ratelimit-limit'), '20')
})

t.test('account deletion removes the user\'s files and their rows', async (t) => {
  const leaving = await person('leaving')
  const staying = await person('staying')
  const mine = [
    (await client.post(leaving.cookie, formOf(['type', 'avatar'], { filename: 'me.png', content: SAMPLES.png }))).json().data!,
    (await client.post(leaving.cookie, formOf({ filename: 'cv.pdf', content: SAMPLES.pdf }), '/api/attachments')).json().data!
  ]
  const theirs = (await client.post(staying.cookie, formOf(['type', 'attachment'], { filename: 'keep.txt', content: SAMPLES.text }))).json().data!
  t.ok(mine.every((f) => storage().stored.includes(String(f.id))))
  t.equal(await deleteAccount(s, leaving.cookie, leaving.email), 204)
  for (const file of mine) {
    t.notOk(storage().stored.includes(String(file.id)), `${String(file.filename)}: bytes removed`)
    t.equal((await client.get(staying.cookie, String(file.url))).status, 404, `${String(file.filename)}: no longer served`)
  }
  t.ok(storage().stored.includes(String(theirs.id)), 'another user\'s file stays')
  t.equal((await client.get(staying.cookie, String(theirs.url))).status, 200)
})

t.test('storage failing: uploads and reads answer 503 in the envelope, health says unhealthy; deletion still completes', async (t) => {
  const user = await person('outage')
  const stored = (await client.post(user.cookie, formOf(['type', 'avatar'], { filename: 'me.png', content: SAMPLES.png }))).json().data!
  const leaving = await person('leaving-in-outage')
  const leavingFile = (await client.post(leaving.cookie, formOf(['type', 'attachment'], { filename: 'x.txt', content: SAMPLES.text }))).json().data!
  // The uploads directory becomes a file: every open, write and probe fails (as root, permissions would not).
  const aside = `${uploadsDir}.aside`
  renameSync(uploadsDir, aside)
  writeFileSync(uploadsDir, 'not a directory')
  try {
    const upload = await client.post(user.cookie, formOf(['type', 'attachment'], { filename: 'x.txt', content: SAMPLES.text }))
    t.equal(upload.status, 503)
    t.same(upload.json(), { error: 'ServiceUnavailable', message: 'File storage is unavailable; try again later.', requestId: upload.headers.get('x-request-id') })
    const read = await client.get(undefined, String(stored.url))
    t.equal(read.status, 503)
    t.equal(read.json().error, 'ServiceUnavailable')
    t.equal(read.headers.get('content-disposition'), null)
    const health = await s.app.inject({ method: 'GET', url: '/health' })
    t.equal(health.statusCode, 503)
    t.equal(health.json().services.storage.status, 'unhealthy')
    t.equal(health.json().services.database.status, 'healthy')
    t.equal(await deleteAccount(s, leaving.cookie, leaving.email), 204, 'a storage failure does not block account deletion')
  } finally {
    rmSync(uploadsDir)
    renameSync(aside, uploadsDir)
  }
  t.equal((await s.app.inject({ method: 'GET', url: '/health' })).json().services.storage.status, 'healthy', 'healthy again once storage is back')
  t.equal((await client.get(undefined, String(stored.url))).status, 200)
  t.equal((await client.get(user.cookie, String(leavingFile.url))).status, 404, 'the deleted account\'s file is not served, though its bytes could not be removed')
})

t.test('file names are kept as labels: no path, no control or bidi characters, bounded', async (t) => {
  const cases: Array<[string | undefined, string]> = [
    ['report.pdf', 'report.pdf'],
    ['C:\\Users\\me\\Desktop\\cv.docx', 'cv.docx'],
    ['../../etc/passwd', 'passwd'],
    ['..', 'file'],
    ['.htaccess', 'htaccess'],
    ['  spaced \t name .txt  ', 'spaced name .txt'],
    ['evil\u202Etxt.exe', 'eviltxt.exe'],
    ['line\r\nbreak.txt', 'linebreak.txt'],
    ['nul\u0000.png', 'nul.png'],
    ['e\u0301te\u0301.txt', 'été.txt'],
    ['', 'file'],
    [undefined, 'file']
  ]
  for (const [raw, expected] of cases) t.equal(sanitiseFilename(raw), expected, JSON.stringify(raw))
  const long = sanitiseFilename(`${'a'.repeat(400)}.jpeg`)
  t.equal(Array.from(long).length, FILENAME_MAX)
  t.ok(long.endsWith('.jpeg'), 'a cut keeps the extension')
  const emoji = sanitiseFilename('😀'.repeat(300))
  t.equal(Array.from(emoji).length, FILENAME_MAX)
  t.ok(Array.from(emoji).every((c) => c === '😀'), 'no surrogate pair is split')
})
