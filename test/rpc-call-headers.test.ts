// The Headers of plain unary calls (src/rpc/call-headers.ts) against the global Headers: the same
// operations on both must read back the same, and refuse the same names and values — except the
// control characters and code points past U+00FF that Node would refuse to write, which CallHeaders
// refuses at once. Calls through both RPC paths are compared in rpc-connect-unary.test.ts.
import t from 'tap'
import { CallHeaders } from '../src/rpc/call-headers.js'

type Operation = ['append' | 'set', string, string] | ['delete', string]

/** Everything a caller can read from a Headers object (single reads first: iterating copies Node's headers). */
function observe (headers: Headers, names: string[]) {
  const get = names.map((name) => headers.get(name))
  const has = names.map((name) => headers.has(name))
  const setCookie = headers.getSetCookie()
  const forEach: Array<[string, string]> = []
  headers.forEach((value, name, target) => { forEach.push([name, value]); if (target !== headers) throw new Error('forEach passed another object') })
  return {
    get,
    has,
    setCookie,
    entries: [...headers.entries()],
    iterated: [...headers],
    forEach,
    keys: [...headers.keys()],
    values: [...headers.values()],
    // Read again after iterating.
    getAfter: names.map((name) => headers.get(name)),
    hasAfter: names.map((name) => headers.has(name))
  }
}

function apply (headers: Headers, operations: Operation[]): void {
  for (const operation of operations) {
    if (operation[0] === 'delete') headers.delete(operation[1])
    else headers[operation[0]](operation[1], operation[2])
  }
}

const NAMES = ['content-type', 'Content-Type', 'CONTENT-TYPE', 'x-multi', 'set-cookie', 'Set-Cookie', 'absent', 'ratelimit-limit', 'x-empty', 'constructor', '__proto__', 'toString']

t.test('the same operations read back the same', async (t) => {
  const cases: Record<string, Operation[]> = {
    'set, then set again': [['set', 'content-type', 'application/json'], ['set', 'Content-Type', 'application/proto']],
    'append joins repeated values': [['append', 'x-multi', 'a'], ['append', 'X-Multi', 'b'], ['append', 'x-multi', 'c, d']],
    'set-cookie stays separate when iterated': [['append', 'set-cookie', 'a=1'], ['append', 'Set-Cookie', 'b=2; Path=/'], ['set', 'content-type', 'text/plain']],
    'delete, case-insensitively': [['set', 'x-multi', 'a'], ['set', 'content-type', 'x'], ['delete', 'X-MULTI'], ['delete', 'absent']],
    'values are trimmed': [['set', 'x-multi', '  a b \t'], ['append', 'x-multi', '\tc\r\n'], ['set', 'x-empty', '   ']],
    'sorted by name, whatever the insertion order': [
      ['set', 'x-ratelimit-reset', '1'], ['set', 'ratelimit-limit', '120'], ['set', 'content-type', 'application/json'],
      ['set', 'Access-Control-Allow-Origin', '*'], ['set', 'retry-after', '7']
    ],
    'latin-1 and obs-text values': [['set', 'x-multi', 'café'], ['append', 'x-multi', '\u00ff']],
    'numbers as strings': [['set', 'ratelimit-limit', String(120)], ['set', 'ratelimit-remaining', String(0)]]
  }
  for (const [name, operations] of Object.entries(cases)) {
    const global = new Headers()
    const ours = new CallHeaders()
    apply(global, operations)
    apply(ours, operations)
    t.same(observe(ours, NAMES), observe(global, NAMES), name)
  }
})

t.test('constructed with initial values', async (t) => {
  t.same(observe(new CallHeaders({ 'Content-Type': 'application/json' }), NAMES), observe(new Headers({ 'Content-Type': 'application/json' }), NAMES))
  t.same(observe(new CallHeaders(), NAMES), observe(new Headers(), NAMES))
})

t.test("a request's headers as Node parsed them", async (t) => {
  const parsed = {
    host: '127.0.0.1:3000',
    'content-type': 'application/json',
    authorization: 'Bearer abc.def.ghi',
    'x-forwarded-for': '10.0.0.1, 10.0.0.2',
    'set-cookie': ['a=1', 'b=2'],
    'x-absent': undefined
  }
  const pairs: Array<[string, string]> = []
  for (const [name, value] of Object.entries(parsed)) {
    if (typeof value === 'string') pairs.push([name, value])
    else if (value !== undefined) for (const item of value) pairs.push([name, item])
  }
  const names = [...NAMES, 'host', 'Authorization', 'x-forwarded-for', 'x-absent']
  t.same(observe(CallHeaders.fromNode(parsed), names), observe(new Headers(pairs), names))

  // Read in place first, then written: the writes see what was read, and never reach Node's object.
  const operations: Operation[] = [['append', 'set-cookie', 'c=3'], ['set', 'Host', 'example.test'], ['delete', 'authorization'], ['append', 'x-forwarded-for', '10.0.0.3']]
  for (let first = 0; first < operations.length; first++) {
    const ours = CallHeaders.fromNode(parsed)
    const global = new Headers(pairs)
    t.equal(ours.get('authorization'), global.get('authorization'))
    apply(ours, operations.slice(first))
    apply(global, operations.slice(first))
    t.same(observe(ours, names), observe(global, names), `after ${operations[first]?.join(' ')}`)
  }
  t.same(parsed['set-cookie'], ['a=1', 'b=2'], "Node's array is not changed")
  t.equal(parsed.host, '127.0.0.1:3000', "Node's object is not changed")
  t.equal(parsed.authorization, 'Bearer abc.def.ghi')
})

t.test('the names and values the global Headers refuses are refused', async (t) => {
  const badNames = ['', 'bad name', 'x:y', 'x\n', 'é', '(x)']
  const badValues = ['a\r\nb', 'a\nb', 'a\rb', 'a\u0000b', 'x\u20acy']
  for (const name of badNames) {
    for (const method of ['append', 'set'] as const) {
      t.throws(() => { new Headers()[method](name, 'v') }, TypeError, `global ${method} ${JSON.stringify(name)}`)
      t.throws(() => { new CallHeaders()[method](name, 'v') }, TypeError, `ours ${method} ${JSON.stringify(name)}`)
    }
    t.throws(() => new CallHeaders().get(name), TypeError)
    t.throws(() => { new Headers().get(name) }, TypeError)
  }
  for (const value of badValues) {
    for (const method of ['append', 'set'] as const) {
      t.throws(() => { new Headers()[method]('x-value', value) }, TypeError, `global ${method} ${JSON.stringify(value)}`)
      t.throws(() => { new CallHeaders()[method]('x-value', value) }, TypeError, `ours ${method} ${JSON.stringify(value)}`)
    }
  }
  const untouched = new CallHeaders({ 'x-value': 'kept' })
  t.throws(() => { untouched.set('x-value', 'a\r\nInjected: yes') })
  t.equal(untouched.get('x-value'), 'kept', 'a refused value leaves the header as it was')
})

t.test('stricter than the global Headers where Node would refuse to write the value', async (t) => {
  for (const value of ['a\u0001b', 'a\u007fb']) {
    t.doesNotThrow(() => { new Headers().set('x-value', value) }, 'the global Headers takes it')
    t.throws(() => { new CallHeaders().set('x-value', value) }, TypeError, 'CallHeaders refuses it')
  }
})
