// The client's address, by one rule for every use of it (DECISIONS §14: rate-limit keys, stream caps,
// logs): from a peer in TRUST_PROXY, the first present of the headers CLIENT_IP_HEADERS lists, in its
// order (default the CDN's header, X-Real-IP, X-Forwarded-For: SPEC Limits rule 2); from any other
// peer its socket address only, so forged headers gain nothing. Only the headers the operator's
// proxies set are listed (DECISIONS §16): behind a proxy that only appends X-Forwarded-For, a
// client-sent CF-Connecting-IP or X-Real-IP would otherwise pass through it and be believed. IPv6 clients are grouped by their /64, which one subscriber typically holds
// whole. TRUST_PROXY is read by @fastify/proxy-addr, Fastify's own parser, here and for Fastify.
import { isIP, isIPv6 } from 'node:net'
import proxyAddr from '@fastify/proxy-addr'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Config } from '../config.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The client's address by the rule above (an IPv6 client as its /64). */
    readonly clientIp: string
    /** clientIp as read when the request arrived (null before). */
    clientIpRead: string | null
  }
}

/**
 * An address as the client it stands for: IPv4 as it is; IPv4-mapped IPv6 (`::ffff:192.0.2.1`, how a
 * dual-stack socket reports an IPv4 peer) as that IPv4; any other IPv6 as the first address of its
 * /64, in RFC 5952's canonical text (lower case, no leading zeros, the longest run of two or more
 * zero groups as `::`), so every spelling of one /64 is one key.
 */
export function clientKeyOf (address: string): string {
  if (!isIPv6(address)) return address.toLowerCase()
  const groups = ipv6Groups(address)
  if (groups === undefined) return address.toLowerCase()
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    const [high = 0, low = 0] = groups.slice(6)
    return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`
  }
  return canonicalIpv6([...groups.slice(0, 4), 0, 0, 0, 0])
}

/** The eight 16-bit groups of a valid IPv6 address (zone dropped, a dotted IPv4 tail as two groups). */
function ipv6Groups (address: string): number[] | undefined {
  const text = address.split('%')[0] ?? ''
  const parse = (part: string): number[] => {
    if (part === '') return []
    return part.split(':').flatMap((field) => {
      if (!field.includes('.')) return [Number.parseInt(field, 16)]
      const [a = 0, b = 0, c = 0, d = 0] = field.split('.').map(Number)
      return [(a << 8) | b, (c << 8) | d]
    })
  }
  const [head = '', tail, ...rest] = text.split('::')
  if (rest.length > 0) return undefined
  const first = parse(head)
  const last = tail === undefined ? [] : parse(tail)
  const zeros = 8 - first.length - last.length
  if (zeros < 0 || (tail === undefined && zeros !== 0)) return undefined
  const groups = [...first, ...new Array<number>(zeros).fill(0), ...last]
  return groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined
}

function canonicalIpv6 (groups: number[]): string {
  // The longest run of zero groups (the first of equally long ones), if at least two long.
  let bestStart = -1
  let bestLength = 1
  for (let i = 0; i < groups.length;) {
    if (groups[i] !== 0) { i++; continue }
    let j = i
    while (j < groups.length && groups[j] === 0) j++
    if (j - i > bestLength) { bestStart = i; bestLength = j - i }
    i = j
  }
  const hex = (part: number[]): string => part.map((g) => g.toString(16)).join(':')
  if (bestStart < 0) return hex(groups)
  return `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLength))}`
}

export type ProxyTrust = (address: string, hop: number) => boolean

/** TRUST_PROXY as a test of a peer: nobody, everybody, or the listed addresses and ranges. Throws on a bad list. */
export function proxyTrust (trustProxy: boolean | string): ProxyTrust {
  if (trustProxy === true) return () => true
  if (trustProxy === false) return () => false
  return proxyAddr.compile(trustProxy.split(',').map((part) => part.trim()))
}

/** The first address in a header value, when it is one (a list takes its first entry). */
function addressIn (value: string | string[] | undefined): string | undefined {
  const raw = Array.isArray(value) ? value[0] : value
  const first = raw?.split(',')[0]?.trim()
  return first !== undefined && isIP(first) !== 0 ? first : undefined
}

/** The address a header gives, by its kind. `request.ip` is Fastify's X-Forwarded-For reading under
 *  the same trust: the nearest address that is not a trusted proxy, which a client cannot forge by
 *  prepending entries its proxy appends to. Any other header is taken as the proxy set it. */
function addressFrom (request: FastifyRequest, header: string): string | undefined {
  if (header !== 'x-forwarded-for') return addressIn(request.headers[header])
  return request.headers['x-forwarded-for'] !== undefined && isIP(request.ip) !== 0 ? request.ip : undefined
}

export function clientIpOf (request: FastifyRequest, trusted: ProxyTrust, headers: readonly string[]): string {
  // Typed as always there, yet gone once an HTTP/2 stream's session has closed (a client that left
  // before its request was logged or counted): no address to key it by, and nothing to throw over.
  const peer = request.socket.remoteAddress ?? (request.ip as string | undefined)
  if (peer === undefined) return 'unknown'
  if (!trusted(peer, 0)) return clientKeyOf(peer)
  for (const header of headers) {
    const address = addressFrom(request, header)
    if (address !== undefined) return clientKeyOf(address)
  }
  return clientKeyOf(peer)
}

export function installClientIp (app: FastifyInstance, config: Pick<Config, 'trustProxy' | 'clientIpHeaders'>): void {
  const trusted = proxyTrust(config.trustProxy)
  // Read once, as the request arrives, and kept: a socket forgets its peer's address once the client
  // has gone, and readers such as the event stream's cap come after awaits (authentication).
  app.decorateRequest('clientIpRead', null)
  app.decorateRequest('clientIp', {
    getter (this: FastifyRequest) { return (this.clientIpRead ??= clientIpOf(this, trusted, config.clientIpHeaders)) }
  })
  app.addHook('onRequest', (request, _reply, done) => {
    request.clientIpRead ??= clientIpOf(request, trusted, config.clientIpHeaders)
    done()
  })
}
