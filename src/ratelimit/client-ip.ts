// The client address that anonymous requests are counted by (SPEC Limits rule 2, DECISIONS §1 and
// §8): from a peer in TRUST_PROXY, the first present of the CDN header, X-Real-IP, X-Forwarded-For,
// else the socket address; from any other peer the socket address only, so forged headers gain
// nothing. IPv6 clients are keyed by their /64, which one subscriber typically holds whole.
import { BlockList, isIP } from 'node:net'
import { normalizeIP } from '@fastify/rate-limit'
import type { FastifyRequest } from 'fastify'
import type { Config } from '../config.js'

const IPV6_SUBNET = 64

/** Fastify-style `trustProxy` (false, true or an IP/CIDR list) as a test of the socket peer. */
function trustTest (trustProxy: boolean | string): (peer: string) => boolean {
  if (trustProxy === true) return () => true
  if (trustProxy === false) return () => false
  const trusted = new BlockList()
  for (const entry of trustProxy.split(',').map((part) => part.trim()).filter((part) => part !== '')) {
    const [address = '', bits] = entry.split('/')
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4'
    if (bits === undefined) trusted.addAddress(address, family)
    else trusted.addSubnet(address, Number(bits), family)
  }
  return (peer) => {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(peer)?.[1]
    if (mapped !== undefined) return trusted.check(mapped, 'ipv4') || trusted.check(peer, 'ipv6')
    const family = isIP(peer)
    return family !== 0 && trusted.check(peer, family === 6 ? 'ipv6' : 'ipv4')
  }
}

/** The first address in a header value, when it is one (a list takes its first entry). */
function addressIn (value: string | string[] | undefined): string | undefined {
  const raw = Array.isArray(value) ? value[0] : value
  const first = raw?.split(',')[0]?.trim()
  return first !== undefined && isIP(first) !== 0 ? first : undefined
}

export type ClientIp = (request: FastifyRequest) => string

export function clientIpResolver (config: Pick<Config, 'trustProxy' | 'cdnIpHeader'>): ClientIp {
  const isTrusted = trustTest(config.trustProxy)
  const cdnHeader = config.cdnIpHeader
  return (request) => {
    const peer = request.socket.remoteAddress ?? request.ip
    if (!isTrusted(peer)) return normalizeIP(peer, IPV6_SUBNET)
    const headers = request.headers
    // `request.ip` is Fastify's X-Forwarded-For reading under the same TRUST_PROXY: the nearest
    // address that is not a trusted proxy, which is the first entry when every hop is trusted, and
    // which a client cannot forge by prepending entries to a header its proxy appends to.
    const forwarded = isIP(request.ip) !== 0 ? request.ip : peer
    return normalizeIP(addressIn(headers[cdnHeader]) ?? addressIn(headers['x-real-ip']) ?? forwarded, IPV6_SUBNET)
  }
}
