// The client's address, by one rule for every use of it (DECISIONS §14: rate-limit keys, stream caps,
// logs): from a peer in TRUST_PROXY, the first present of the CDN header, X-Real-IP and
// X-Forwarded-For (SPEC Limits rule 2); from any other peer its socket address only, so forged
// headers gain nothing. IPv6 clients are grouped by their /64, which one subscriber typically holds
// whole. TRUST_PROXY is read by @fastify/proxy-addr, Fastify's own parser, here and for Fastify.
import { isIP } from 'node:net'
import proxyAddr from '@fastify/proxy-addr'
import { normalizeIP } from '@fastify/rate-limit'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Config } from '../config.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The client's address by the rule above (an IPv6 client as its /64). */
    readonly clientIp: string
  }
}

const IPV6_SUBNET = 64

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

export function clientIpOf (request: FastifyRequest, trusted: ProxyTrust, cdnHeader: string): string {
  const peer = request.socket.remoteAddress ?? request.ip
  if (!trusted(peer, 0)) return normalizeIP(peer, IPV6_SUBNET)
  const headers = request.headers
  // `request.ip` is Fastify's X-Forwarded-For reading under the same trust: the nearest address that
  // is not a trusted proxy, which a client cannot forge by prepending entries its proxy appends to.
  const forwarded = isIP(request.ip) !== 0 ? request.ip : peer
  return normalizeIP(addressIn(headers[cdnHeader]) ?? addressIn(headers['x-real-ip']) ?? forwarded, IPV6_SUBNET)
}

export function installClientIp (app: FastifyInstance, config: Pick<Config, 'trustProxy' | 'cdnIpHeader'>): void {
  const trusted = proxyTrust(config.trustProxy)
  app.decorateRequest('clientIp', {
    getter (this: FastifyRequest) { return clientIpOf(this, trusted, config.cdnIpHeader) }
  })
}
