// The Headers of a plain unary call (connect-unary.ts): the request's and the reply's.
//
// Why not the global Headers: undici's converts every value of every header again, character by
// character, on the way in, and allocates a structure per entry: ~3 µs for a call's request headers
// and as much for the six rate-limit headers of its reply, 5 % of a whole GetMe call. The request's
// headers were already checked by Node's HTTP parser, and the reply's are checked again by Node when
// written. What callers can observe is kept: names are case-insensitive and must be HTTP tokens,
// values are trimmed and refused when Node could not write them (CR, LF, NUL, other control
// characters, anything past U+00FF), `get` joins repeated values with ", ", and iteration is
// sorted by name with each Set-Cookie on its own (test/rpc-call-headers.test.ts compares it with the
// global Headers).
import type { IncomingHttpHeaders } from 'node:http'

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
/** What Node refuses to write in a header value (it would throw when the reply is sent). */
const FORBIDDEN_IN_VALUE = /[^\t\x20-\x7e\x80-\xff]/

export class CallHeaders implements Headers {
  /** Lower-case name → its values, in the order they were added. */
  readonly #values = new Map<string, string[]>()
  /**
   * Node's parsed request headers, read in place until anything writes or iterates: a call usually
   * reads one header (Authorization), and copying them all costs more than the rest of this class.
   */
  #node: IncomingHttpHeaders | undefined

  /** The request's headers as Node parsed them (names already lower-case, values already checked). */
  static fromNode (headers: IncomingHttpHeaders): CallHeaders {
    const result = new CallHeaders()
    result.#node = headers
    return result
  }

  constructor (init?: Record<string, string>) {
    if (init !== undefined) for (const [name, value] of Object.entries(init)) this.append(name, value)
  }

  /** The values of a lower-case name, from Node's headers while they are still read in place. */
  #valuesOf (key: string): readonly string[] | undefined {
    const node = this.#node
    if (node === undefined) return this.#values.get(key)
    if (!Object.hasOwn(node, key)) return undefined
    const value = node[key]
    return typeof value === 'string' ? [value] : value
  }

  /** Copies Node's headers into this object's own map, before the first write or iteration. */
  #own (): Map<string, string[]> {
    const node = this.#node
    if (node !== undefined) {
      this.#node = undefined
      for (const [name, value] of Object.entries(node)) {
        if (typeof value === 'string') this.#values.set(name, [value])
        else if (value !== undefined) this.#values.set(name, [...value])
      }
    }
    return this.#values
  }

  append (name: string, value: string): void {
    const key = checkedName(name, 'append')
    const clean = checkedValue(value, 'append')
    const own = this.#own()
    const values = own.get(key)
    if (values === undefined) own.set(key, [clean])
    else values.push(clean)
  }

  set (name: string, value: string): void {
    const key = checkedName(name, 'set')
    const clean = checkedValue(value, 'set')
    this.#own().set(key, [clean])
  }

  delete (name: string): void {
    const key = checkedName(name, 'delete')
    this.#own().delete(key)
  }

  get (name: string): string | null {
    return this.#valuesOf(checkedName(name, 'get'))?.join(', ') ?? null
  }

  has (name: string): boolean {
    return this.#valuesOf(checkedName(name, 'has')) !== undefined
  }

  getSetCookie (): string[] {
    return [...(this.#valuesOf('set-cookie') ?? [])]
  }

  forEach (callback: (value: string, name: string, headers: Headers) => void, thisArg?: unknown): void {
    for (const [name, value] of this.entries()) callback.call(thisArg, value, name, this)
  }

  entries (): IterableIterator<[string, string]> {
    return this.#pairs()[Symbol.iterator]()
  }

  keys (): IterableIterator<string> {
    return this.#pairs().map(([name]) => name)[Symbol.iterator]()
  }

  values (): IterableIterator<string> {
    return this.#pairs().map(([, value]) => value)[Symbol.iterator]()
  }

  [Symbol.iterator] (): IterableIterator<[string, string]> {
    return this.entries()
  }

  /** What iteration yields: sorted by name, repeated values joined, except each Set-Cookie alone. */
  #pairs (): Array<[string, string]> {
    const own = this.#own()
    const pairs: Array<[string, string]> = []
    for (const name of [...own.keys()].sort()) {
      const values = own.get(name) ?? []
      if (name === 'set-cookie') for (const value of values) pairs.push([name, value])
      else pairs.push([name, values.join(', ')])
    }
    return pairs
  }
}

function checkedName (name: string, method: string): string {
  if (!TOKEN.test(name)) throw new TypeError(`Headers.${method}: "${name}" is an invalid header name.`)
  return name.toLowerCase()
}

/** Tab, LF, CR or space: what the Fetch standard trims from a header value. */
function isHttpWhitespace (code: number): boolean {
  return code === 0x09 || code === 0x0a || code === 0x0d || code === 0x20
}

/** Trimmed by index: a regular expression for the trailing run would backtrack quadratically. */
function trimmed (value: string): string {
  let start = 0
  let end = value.length
  while (start < end && isHttpWhitespace(value.charCodeAt(start))) start++
  while (end > start && isHttpWhitespace(value.charCodeAt(end - 1))) end--
  return value.slice(start, end)
}

function checkedValue (value: string, method: string): string {
  const clean = trimmed(String(value))
  if (FORBIDDEN_IN_VALUE.test(clean)) throw new TypeError(`Headers.${method}: "${clean}" is an invalid header value.`)
  return clean
}
