// The process's logs (issue 31 item 2): `src/server.ts` writes through pino's asynchronous
// destination, and what it still holds is written out before the process exits — after SIGTERM every
// request answered has its access line on standard output, none lost in the buffer.
import t from 'tap'
import { startServer } from './helpers/server-process.js'

t.test('after SIGTERM, every answered request\'s access line is on standard output', async (t) => {
  const { child, url, exited } = await startServer({}, ['--import=tsx', 'src/server.ts'])
  let out = ''
  child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString() })
  const ids: string[] = []
  for (let batch = 0; batch < 4; batch++) {
    const answers = await Promise.all(Array.from({ length: 50 }, async (_, i) => await fetch(`${url}/health`, { headers: { 'x-request-id': `flush-${batch}-${i}` } })))
    for (const answer of answers) ids.push(answer.headers.get('x-request-id') ?? '')
  }
  child.kill('SIGTERM')
  t.equal(await exited, 0, 'exits 0')
  const lines = out.split('\n').filter((line) => line.trim() !== '').map((line) => JSON.parse(line) as { msg: string, reqId?: string })
  const logged = new Set(lines.filter((line) => line.msg === 'request').map((line) => line.reqId))
  t.equal(ids.filter((id) => !logged.has(id)).length, 0, `all ${ids.length} access lines written`)
  t.ok(lines.some((line) => line.msg === 'closing the listener'), 'and the shutdown\'s own lines')
})
