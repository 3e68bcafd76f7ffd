// CV files built to take memory (DECISIONS §17, issue 37): each bomb the old pre-checks let through
// — a nested /DecodeParms, an escaped filter name, Flate twice over, a stream that breaks part-way,
// a 1 MiB file unpacking to a gigabyte, an encrypted one, a DOCX whose XML builds a huge tree — is
// refused 400 `UnreadableFile` naming the file (RPC INVALID_ARGUMENT naming `content`), while this
// process, which hosts the service, grows by no more than a few MiB: the parse runs in a child
// process whose whole memory the kernel caps. Afterwards ordinary files parse on both transports.
import t from 'tap'
import { Code } from '@connectrpc/connect'
import { PassportService } from '../src/gen/app/passport/v1/passport_pb.js'
import { startApp } from './helpers/app.js'
import {
  brokenFlateBomb, docx, doubleFlateBomb, encryptedBomb, encryptedPdf, escapedFilterBomb, nestedParmsBomb, pdfBomb, pdfWithText, postCv, warmCvParser, xmlBombDocx, zipBombDocx
} from './helpers/cv-files.js'
import { rpcError, signInPerson } from './helpers/people.js'
import { MiB, mib, rssGrowth } from './helpers/rss.js'

/** What this process may grow by while one bomb is parsed: the file, its copies in the form and on
 *  the IPC channel, and the noise of a process that also runs the test. */
const ONE_BOMB_GROWTH = 16 * MiB

const CV = ['Jane Doe', 'Senior Software Engineer', 'Experience', 'Senior Engineer at Acme Corp', 'Jan 2020 – Present', 'Skills', 'TypeScript, Go, Docker']

t.test('each bomb is refused 400 UnreadableFile naming the file; this process grows by a few MiB at most', async (t) => {
  const s = await startApp({}, { rateLimit: { maxOverride: { expensive: 1000 } } })
  t.teardown(s.close)
  const person = await signInPerson(s, 'bomber')
  const bombs: Array<[string, () => Buffer, RegExp]> = [
    ['a nested /DecodeParms << … >> after /FlateDecode (1 GiB)', () => nestedParmsBomb(), /memory|within 10 s/],
    ['/Flat#65Decode (1 GiB)', () => escapedFilterBomb(), /memory|within 10 s/],
    ['[/FlateDecode /FlateDecode] (a kilobyte to 512 MiB)', () => doubleFlateBomb(), /memory|within 10 s/],
    ['a stream that breaks after 1 GiB', () => brokenFlateBomb(), /memory|within 10 s/],
    ['a 1 MiB PDF unpacking to 1 GiB', () => pdfBomb(1024), /memory|within 10 s/],
    ['an encrypted PDF (empty user password) hiding a 1 GiB stream', () => encryptedBomb(), /memory|within 10 s/],
    ['an encrypted PDF with a password', () => encryptedPdf(), /encrypted/],
    ['a zip-bomb DOCX (overlapping entries)', () => zipBombDocx(), /zip bomb/],
    ['a DOCX whose honest 50 MiB of XML is millions of elements', () => xmlBombDocx(), /memory|within 10 s/]
  ]
  for (const [what, build, reason] of bombs) {
    // A parser replaced after the last bomb is started before this one is sent: on a crowded
    // machine a start alone can take past the 10 s a parse may wait (503).
    await warmCvParser(s.url, person.cookie)
    const file = build()
    const { result, growth } = await rssGrowth(async () => await postCv(s.url, person.cookie, file))
    t.equal(result.status, 400, `${what} (${file.length} bytes): 400`)
    t.match(result.body, { error: 'UnreadableFile', details: [{ field: 'file' }] }, `${what}: UnreadableFile naming the file`)
    t.match(result.body.message, reason, `${what}: ${String(result.body.message)}`)
    t.ok(growth <= ONE_BOMB_GROWTH, `${what}: this process grew by ${mib(growth)} (at most ${mib(ONE_BOMB_GROWTH)})`)
  }

  // The bound holds over RPC too, naming the field that carried the file.
  const rpcPerson = await signInPerson(s, 'rpc-bomber')
  await warmCvParser(s.url, person.cookie)
  const { result: refused, growth } = await rssGrowth(async () => await rpcError(rpcPerson.rpc(PassportService, { binary: true }).importCV({ content: doubleFlateBomb(), filename: 'cv.pdf' })))
  t.equal(refused.code, Code.InvalidArgument, 'RPC: INVALID_ARGUMENT')
  t.match(refused.rawMessage, /^content: (needs more than|could not be read)/)
  t.ok(growth <= ONE_BOMB_GROWTH, `RPC: this process grew by ${mib(growth)}`)
  t.same((await rpcPerson.rest('GET', '/api/passport')).json().data.skills, [], 'nothing was imported')

  // A parser replaced after a breach reads ordinary files again, on both transports.
  await warmCvParser(s.url, person.cookie)
  for (const [kind, file] of [['pdf', pdfWithText([CV])], ['docx', docx(CV)], ['text', Buffer.from(CV.join('\n'))]] as const) {
    const parsed = await postCv(s.url, person.cookie, file)
    t.equal(parsed.status, 200, `REST ${kind} after the bombs`)
    t.same(parsed.body.data?.skills, ['TypeScript', 'Go', 'Docker'])
    const viaRpc = await (await signInPerson(s, `rpc-${kind}`)).rpc(PassportService).importCV({ content: file, filename: `cv.${kind}` })
    t.same(viaRpc.passport?.skills.map((skill) => skill.name), ['TypeScript', 'Go', 'Docker'], `RPC ${kind}`)
  }
})
