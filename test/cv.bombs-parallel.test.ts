// CV bombs at once (DECISIONS §17, issue 37): five parsed in parallel are all refused while /health
// and a room read keep being answered and this process, which hosts the service, grows by at most
// 32 MiB (the parses run in child processes whose memory the kernel caps); past COMPUTE_THREADS
// running and COMPUTE_QUEUE waiting, a parse is refused at once: REST 503 with Retry-After, RPC
// UNAVAILABLE with retry-after.
import t from 'tap'
import { Code } from '@connectrpc/connect'
import { PassportService } from '../src/gen/app/passport/v1/passport_pb.js'
import { PROBE_TIMEOUT_MS } from '../src/db/database-probe.js'
import { startApp } from './helpers/app.js'
import { cvForm, doubleFlateBomb, encryptedBomb, escapedFilterBomb, nestedParmsBomb, pdfBomb, postCv, postCvForm, warmCvParser } from './helpers/cv-files.js'
import { rpcError, signInPerson } from './helpers/people.js'
import { MiB, mib, rssGrowth } from './helpers/rss.js'

/** Five bombs at once (the bench's goal). */
const FIVE_BOMBS_GROWTH = 32 * MiB

t.test('five bombs at once: all refused, /health and a room read answered meanwhile, this process within 32 MiB', async (t) => {
  const s = await startApp({ COMPUTE_THREADS: '5' }, { rateLimit: { maxOverride: { expensive: 1000 } } })
  t.teardown(s.close)
  const reader = await signInPerson(s, 'reader')
  const room = (await reader.rest('POST', '/api/rooms', { name: 'busy times' })).json().data
  const bomber = await signInPerson(s, 'parallel')
  const bombs = [pdfBomb(1024), doubleFlateBomb(), nestedParmsBomb(), escapedFilterBomb(), encryptedBomb()].map((file) => cvForm(file))

  const state = { running: true }
  const reads: number[] = []
  const healths: Array<{ status: number, timedOutOnly: boolean, failed: string[] }> = []
  const meanwhile = (async () => {
    while (state.running) {
      const [health, read] = await Promise.all([fetch(`${s.url}/health`), fetch(`${s.url}/api/rooms/${String(room.id)}`, { headers: { cookie: `app_session=${reader.cookie}` } })])
      const report = await health.json() as { services: Record<string, { status: string, latency: number }> }
      await read.arrayBuffer()
      reads.push(read.status)
      // A part that did not answer within its probe's timeout, on a machine other work crowds.
      const timedOut = Object.entries(report.services).filter(([, part]) => part.status === 'unhealthy' && part.latency >= PROBE_TIMEOUT_MS).map(([name]) => name)
      const failed = Object.entries(report.services).filter(([, part]) => part.status === 'unhealthy').map(([name]) => name)
      healths.push({ status: health.status, timedOutOnly: failed.length > 0 && failed.length === timedOut.length, failed })
      // Well within the read tier's 200 a minute.
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  })()
  // Five parses at once start the five parsers; five ordinary files of a mebibyte at once, with the
  // probes above running, bring this process (which also runs the test's client) to what handling
  // them takes, so what is measured below is what the bombs add beyond ordinary files of their size.
  await Promise.all(Array.from({ length: 5 }, async () => { await warmCvParser(s.url, bomber.cookie) }))
  const ordinary = cvForm(Buffer.concat([Buffer.from('Jane Doe\nSkills\nGo\n'), Buffer.alloc(1024 * 1024, 0x20)]))
  t.same((await Promise.all(bombs.map(async () => await postCvForm(s.url, bomber.cookie, ordinary)))).map((r) => r.status), [200, 200, 200, 200, 200], 'five ordinary files at once')
  const { result, growth } = await rssGrowth(async () => await Promise.all(bombs.map(async (form) => await postCvForm(s.url, bomber.cookie, form))))
  state.running = false
  await meanwhile
  // Each bomb is refused: 400 UnreadableFile once its parser ran past the limit, or, on a machine
  // too crowded to start a parser within 10 s, 503 busy; never accepted, never a 500.
  const refused = result.filter((r) => r.status === 400 && r.body.error === 'UnreadableFile')
  const busy = result.filter((r) => r.status === 503 && /the service is busy/.test(String(r.body.message)))
  t.equal(refused.length + busy.length, 5, `every bomb refused (${result.map((r) => r.status).join(', ')})`)
  t.ok(refused.length >= 1, `${refused.length} of them parsed past the limit at once`)
  t.ok(reads.length >= 2, `${reads.length} rounds of /health and a room read while the bombs were parsed`)
  t.same(reads.filter((status) => status !== 200), [], 'every room read answered 200')
  // /health answers 200 unless a probe timed out (the machine, crowded by other work, was slower than
  // the probe's timeout: not a part that failed); even so, most rounds answer 200.
  const unhealthy = healths.filter((h) => h.status !== 200)
  t.same(unhealthy.filter((h) => !h.timedOutOnly), [], '/health 200, or 503 only for a probe that timed out')
  t.ok(unhealthy.length * 2 <= healths.length, `/health 200 in ${healths.length - unhealthy.length} of ${healths.length} rounds (${unhealthy.map((h) => h.failed.join('+')).join(', ')})`)
  t.ok(growth <= FIVE_BOMBS_GROWTH, `this process grew by ${mib(growth)} (at most ${mib(FIVE_BOMBS_GROWTH)})`)
})

t.test('past threads + queue a parse is refused at once: REST 503 with Retry-After, RPC UNAVAILABLE', async (t) => {
  // One parser and one place in the queue. The parser starts with the first parse, so the first of
  // three sent at once waits for it, the second waits in the queue, the third finds no room.
  const file = Buffer.from('Jane Doe\nSkills\nTypeScript, Go\n')
  for (const transport of ['REST', 'RPC'] as const) {
    const s = await startApp({ COMPUTE_THREADS: '1', COMPUTE_QUEUE: '1' }, { rateLimit: { maxOverride: { expensive: 1000 } } })
    const person = await signInPerson(s, 'queued')
    if (transport === 'REST') {
      const answers = await Promise.all([1, 2, 3].map(async () => await postCv(s.url, person.cookie, file)))
      const statuses = answers.map((a) => a.status).sort()
      t.same(statuses, [200, 200, 503], `REST: two parsed, one refused (${statuses.join(', ')})`)
      const busy = answers.find((a) => a.status === 503)
      t.match(busy?.body, { error: 'ServiceUnavailable', message: /1 running and 1 waiting/ })
      t.ok(Number(busy?.retryAfter) >= 1, `Retry-After: ${String(busy?.retryAfter)}`)
    } else {
      const client = person.rpc(PassportService)
      const calls = await Promise.allSettled([1, 2, 3].map(async () => await client.importCV({ content: file, filename: 'cv.txt' })))
      t.same(calls.map((c) => c.status).sort(), ['fulfilled', 'fulfilled', 'rejected'], 'RPC: two imported, one refused')
      const error = await rpcError(Promise.reject(calls.find((c) => c.status === 'rejected')?.reason))
      t.equal(error.code, Code.Unavailable)
      t.ok(Number(error.metadata.get('retry-after')) >= 1, `retry-after: ${String(error.metadata.get('retry-after'))}`)
    }
    t.equal((await postCv(s.url, person.cookie, file)).status, 200, `${transport}: served once the queue drained`)
    await s.close()
  }
})
