// CV parsing and import (DECISIONS §10) over real HTTP (multipart) and a real Connect client: PDF,
// DOCX and plain text judged by their bytes; every file that cannot be read a 400 `UnreadableFile`
// naming it with a reason (scanned, encrypted, corrupt, zip bomb, an image; bombs of every shape in
// cv.bombs.test.ts), a 5 MiB + 1 byte file 413 / RESOURCE_EXHAUSTED; a preview
// changes nothing; an import merges into a passport that already has skills.
import t from 'tap'
import { Code } from '@connectrpc/connect'
import { PassportService } from '../src/gen/app/passport/v1/passport_pb.js'
import { CV_MAX_BYTES } from '../src/core/passport/cv.types.js'
import { startApp } from './helpers/app.js'
import { corruptPdf, docx, encryptedPdf, lyingDocx, pdfBomb, pdfWithText, pdfWithoutText, pngImage, warmCvParser, zipBombDocx } from './helpers/cv-files.js'
import { rpcError, signInPerson, type Person } from './helpers/people.js'
import { formOf } from './helpers/uploads.js'

const s = await startApp()
t.teardown(s.close)
// The parser process loads its parsers once, before the tests time anything against the 10 s limit.
await warmCvParser(s.url, (await signInPerson(s, 'warmer')).cookie)

const CV = [
  'Jane Doe',
  'Senior Software Engineer',
  'jane@example.com | +44 20 7946 0958',
  'Experience',
  'Senior Engineer at Acme Corp',
  'Jan 2020 – Present',
  '- Built services in Node.js and PostgreSQL',
  'Developer, Widgets Ltd (03/2016 - 12/2019)',
  'Wrote TypeScript front ends',
  'Education',
  'BSc Computer Science, University of Leeds, 2012 - 2016',
  'Skills',
  'JS, TypeScript, Go, Docker, k8s',
  'Languages: Python | Rust'
]

const EXPECTED_SKILLS = ['JavaScript', 'TypeScript', 'Go', 'Docker', 'Kubernetes', 'Python', 'Rust', 'PostgreSQL']

async function post (p: Person, path: string, content: Buffer, filename = 'cv.bin'): Promise<{ status: number, body: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const response = await fetch(`${s.url}${path}`, { method: 'POST', headers: { cookie: `app_session=${p.cookie}` }, body: formOf({ filename, content }) })
  return { status: response.status, body: await response.json() }
}

// The expensive tier allows 5 parses a minute per user: each test takes people of its own.
t.test('a PDF, a DOCX and plain text give the same preview, and change nothing', async (t) => {
  const me = await signInPerson(s, 'previewer')
  for (const [kind, file] of [['pdf', pdfWithText([CV.slice(0, 9), CV.slice(9)])], ['docx', docx(CV)], ['text', Buffer.from(CV.join('\n'))]] as const) {
    const { status, body } = await post(me, '/api/cv/parse', file, `cv.${kind === 'pdf' ? 'docx' : 'pdf'}`)
    t.equal(status, 200, `${kind} (sent under a misleading name)`)
    t.same(body.data.skills, EXPECTED_SKILLS, `${kind}: skills, aliases resolved`)
    t.same(body.data.experience, [
      { title: 'Senior Engineer', company: 'Acme Corp', startDate: '2020-01', endDate: null, description: 'Built services in Node.js and PostgreSQL' },
      { title: 'Developer', company: 'Widgets Ltd', startDate: '2016-03', endDate: '2019-12', description: 'Wrote TypeScript front ends' }
    ], `${kind}: experience, education left out`)
    t.equal(body.data.headline, 'Senior Software Engineer')
    t.ok(body.data.textLength > 300)
  }
  const passport = (await me.rest('GET', '/api/passport')).json().data
  t.same([passport.skills, passport.experience, passport.headline], [[], [], ''], 'the preview stored nothing')
})

t.test('bad files: each a 400 UnreadableFile naming the file with the reason, never a 500', async (t) => {
  const cases: Array<[string, Buffer, RegExp]> = [
    ['a scanned-like PDF', pdfWithoutText(), /no text/],
    ['an encrypted PDF', encryptedPdf(), /encrypted/],
    ['a corrupt PDF', corruptPdf(), /damaged PDF/],
    ['a zip-bomb DOCX', zipBombDocx(), /zip bomb.*declares 101 MiB/],
    ['a DOCX whose sizes lie', lyingDocx(), /zip bomb.*unpacks to more than it declares/],
    ['an image', pngImage(), /image\/png, not a CV/],
    ['binary junk', Buffer.from([0x00, 0x01, 0x02, 0xfe, 0xff, 0x10, 0x11]), /neither a PDF, a DOCX nor/],
    // Last: it ends the parser's process, which the next parse waits for.
    ['a PDF deflate bomb', pdfBomb(1024), /needs more than the 256 MiB of memory/]
  ]
  let person: Person | undefined
  for (const [i, [what, file, reason]] of cases.entries()) {
    if (i % 5 === 0) person = await signInPerson(s, 'badfiles')
    const { status, body } = await post(person!, '/api/cv/parse', file)
    t.equal(status, 400, what)
    t.equal(body.error, 'UnreadableFile')
    t.equal(body.details?.[0]?.field, 'file')
    t.match(body.message, reason, `${what}: ${String(body.message)}`)
  }
  await warmCvParser(s.url, (await signInPerson(s, 'rewarmer')).cookie)
})

t.test('size: 5 MiB is read, 5 MiB + 1 byte is 413 on REST and RESOURCE_EXHAUSTED on RPC', async (t) => {
  const me = await signInPerson(s, 'heavy')
  const text = Buffer.from(CV.join('\n') + '\n')
  const padded = (size: number): Buffer => Buffer.concat([text, Buffer.alloc(size - text.length, 0x20)])
  const exact = await post(me, '/api/cv/parse', padded(CV_MAX_BYTES))
  t.equal(exact.status, 200, 'exactly 5 MiB')
  const over = await post(me, '/api/cv/parse', padded(CV_MAX_BYTES + 1))
  t.equal(over.status, 413)
  t.match(over.body, { error: 'PayloadTooLarge', details: [{ field: 'file' }] })
  t.equal((await post(me, '/api/passport/import', padded(CV_MAX_BYTES + 1))).status, 413)
  for (const binary of [false, true]) {
    const refused = await rpcError(me.rpc(PassportService, { binary }).importCV({ content: padded(CV_MAX_BYTES + 1), filename: 'cv.txt' }))
    t.equal(refused.code, Code.ResourceExhausted, `RPC ${binary ? 'binary' : 'JSON'}`)
    t.match(refused.rawMessage, /content: must be at most 5 MiB/)
  }
  t.same((await me.rest('GET', '/api/passport')).json().data.skills, [], 'nothing was imported')
})

t.test('an import merges into a passport that already has skills, on both transports', async (t) => {
  const me = await signInPerson(s, 'importer')
  await me.rest('POST', '/api/passport/skills', { name: 'javascript', level: 5 })
  await me.rest('POST', '/api/passport/skills', { name: 'Haskell' })
  await me.rest('PATCH', '/api/passport', { headline: 'My own headline' })
  const { status, body } = await post(me, '/api/passport/import', docx(CV), 'cv.docx')
  t.equal(status, 200)
  t.same(body.data.skills.map((x: { name: string }) => x.name), ['javascript', 'Haskell', ...EXPECTED_SKILLS.slice(1)], 'skills already there (any case) kept as they were, the rest added')
  t.equal(body.data.skills[0].level, 5)
  t.same(body.data.experience.map((e: { company: string }) => e.company), ['Acme Corp', 'Widgets Ltd'])
  t.equal(body.data.headline, 'My own headline', 'a headline already written is kept')

  const again = await me.rpc(PassportService, { binary: true }).importCV({ content: Buffer.from(CV.join('\n')), filename: 'cv.txt' })
  t.equal(again.passport?.skills.length, EXPECTED_SKILLS.length + 1, 'importing again adds no skill twice')
  t.equal(again.passport?.experience.length, 4, 'experience entries are added as they come')
  t.equal(again.passport?.experience[0]?.endDate, undefined)

  const fresh = await signInPerson(s, 'fresh')
  const viaJson = await fresh.rpc(PassportService).importCV({ content: pdfWithText([CV]), filename: 'cv.pdf' })
  t.equal(viaJson.passport?.headline, 'Senior Software Engineer', 'an empty headline is filled in')
  const bad = await rpcError(fresh.rpc(PassportService).importCV({ content: encryptedPdf(), filename: 'cv.pdf' }))
  t.equal(bad.code, Code.InvalidArgument)
  t.match(bad.rawMessage, /content: is an encrypted/)
  const long = await rpcError(fresh.rpc(PassportService).importCV({ content: Buffer.from('x'), filename: 'f'.repeat(1_000_000) }))
  t.equal(long.code, Code.InvalidArgument)
  t.match(long.rawMessage, /filename/)
})

t.test('the form: one file part, nothing else; JSON is 415', async (t) => {
  const me = await signInPerson(s, 'formal')
  const json = await me.rest('POST', '/api/cv/parse', { file: 'x' })
  t.equal(json.statusCode, 415)
  const noFile = await fetch(`${s.url}/api/cv/parse`, { method: 'POST', headers: { cookie: `app_session=${me.cookie}` }, body: formOf(['note', 'hi']) })
  t.equal(noFile.status, 400)
  t.match(await noFile.json(), { details: [{ field: 'note' }] })
  const empty = await post(me, '/api/cv/parse', Buffer.alloc(0))
  t.equal(empty.status, 400)
  t.match(empty.body.message, /file/)
})

t.test('CV parsing is in the expensive tier: the 6th in a minute is 429, before its body is read', async (t) => {
  const me = await signInPerson(s, 'greedy')
  const statuses: number[] = []
  for (let i = 0; i < 6; i++) statuses.push((await post(me, i % 2 === 0 ? '/api/cv/parse' : '/api/passport/import', Buffer.from('Skills\nGo'))).status)
  t.same(statuses.slice(0, 5).every((x) => x === 200), true, `five pass (${statuses.join(', ')})`)
  t.equal(statuses[5], 429)
})
