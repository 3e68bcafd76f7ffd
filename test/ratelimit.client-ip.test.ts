// The client address anonymous requests are counted by (SPEC Limits rule 2, DECISIONS §1/§8):
// forwarding headers only from a peer in TRUST_PROXY, in the order CLIENT_IP_HEADERS lists (by default CDN header, X-Real-IP,
// X-Forwarded-For; IPv6 by /64. Plus the bound on the per-instance memory counters.
import t from 'tap'
import { Code, ConnectError } from '@connectrpc/connect'
import { ConfigError, loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/database.js'
import { AuthService } from '../src/gen/app/auth/v1/auth_pb.js'
import { MemoryCounters } from '../src/ratelimit/memory-counters.js'
import { startApp, testEnv, uniqueClientIp, uniqueEmail, type TestApp } from './helpers/app.js'
import { rpcClient } from './helpers/sign-in.js'

const database = await openDatabase(loadConfig(testEnv()))
t.teardown(async () => { await database.close() })
// Same database, two peers' views: one trusts nobody, one trusts the loopback proxy.
const untrusted = await startApp({ TRUST_PROXY: undefined }, { database })
t.teardown(untrusted.close)
const trusted = await startApp({ TRUST_PROXY: '127.0.0.1' }, { database })
t.teardown(trusted.close)

/** POST request-login (strict, 10 per address) with these headers from this socket peer. */
async function requestLogin (app: TestApp, headers: Record<string, string>, remoteAddress = '127.0.0.1'): Promise<number> {
  const res = await app.app.inject({ method: 'POST', url: '/api/auth/request-login', payload: { email: uniqueEmail() }, headers, remoteAddress })
  return res.statusCode
}

async function rpcCode (call: Promise<unknown>): Promise<Code | 'ok'> {
  try {
    await call
    return 'ok'
  } catch (error) {
    return ConnectError.from(error).code
  }
}

t.test('an untrusted peer: forged X-Forwarded-For, X-Real-IP and CF-Connecting-IP are ignored (REST)', async (t) => {
  const peer = '198.51.100.20'
  for (let i = 0; i < 10; i++) {
    const forged = uniqueClientIp()
    t.equal(await requestLogin(untrusted, { 'x-forwarded-for': forged, 'x-real-ip': uniqueClientIp(), 'cf-connecting-ip': uniqueClientIp() }, peer), 200)
  }
  t.equal(await requestLogin(untrusted, { 'x-forwarded-for': uniqueClientIp() }, peer), 429, 'a new forged address each time: still one client')
  t.equal(await requestLogin(untrusted, { 'cf-connecting-ip': uniqueClientIp() }, peer), 429)
  t.equal(await requestLogin(untrusted, { 'x-real-ip': uniqueClientIp() }, peer), 429)
  t.equal(await requestLogin(untrusted, {}, '198.51.100.21'), 200, 'another socket address is another client')
})

t.test('an untrusted peer: forged headers are ignored over RPC too', async (t) => {
  // The RPC client connects from 127.0.0.1, which this app does not trust.
  const codes: Array<Code | 'ok'> = []
  for (let i = 0; i < 11; i++) {
    const auth = rpcClient(untrusted, AuthService, { clientIp: uniqueClientIp() })
    codes.push(await rpcCode(auth.requestLogin({ email: uniqueEmail() })))
  }
  t.same(codes, [...Array(10).fill('ok'), Code.ResourceExhausted], 'a new forged address each call: still one client')
})

t.test('a trusted peer: each header is honoured, first CDN header, then X-Real-IP, then X-Forwarded-For', async (t) => {
  // CDN header wins over the others: a fixed CF-Connecting-IP with rotating others is one client.
  const cdn = uniqueClientIp()
  for (let i = 0; i < 10; i++) t.equal(await requestLogin(trusted, { 'cf-connecting-ip': cdn, 'x-real-ip': uniqueClientIp(), 'x-forwarded-for': uniqueClientIp() }), 200)
  t.equal(await requestLogin(trusted, { 'cf-connecting-ip': cdn, 'x-real-ip': uniqueClientIp() }), 429, 'the CDN header is the key')
  t.equal(await requestLogin(trusted, { 'x-real-ip': cdn }), 429, 'the same address from X-Real-IP is the same client')
  t.equal(await requestLogin(trusted, { 'cf-connecting-ip': uniqueClientIp() }), 200, 'another CDN address is another client')

  // X-Real-IP wins over X-Forwarded-For.
  const real = uniqueClientIp()
  for (let i = 0; i < 10; i++) t.equal(await requestLogin(trusted, { 'x-real-ip': real, 'x-forwarded-for': uniqueClientIp() }), 200)
  t.equal(await requestLogin(trusted, { 'x-real-ip': real, 'x-forwarded-for': uniqueClientIp() }), 429)
  t.equal(await requestLogin(trusted, { 'x-forwarded-for': real }), 429, 'the same address from X-Forwarded-For is the same client')

  // X-Forwarded-For alone.
  const forwarded = uniqueClientIp()
  for (let i = 0; i < 10; i++) t.equal(await requestLogin(trusted, { 'x-forwarded-for': forwarded }), 200)
  t.equal(await requestLogin(trusted, { 'x-forwarded-for': forwarded }), 429)
  t.equal(await requestLogin(trusted, { 'x-forwarded-for': uniqueClientIp() }), 200)

  // Behind a proxy that appends, a client prepending entries does not choose its key.
  const client = uniqueClientIp()
  for (let i = 0; i < 10; i++) t.equal(await requestLogin(trusted, { 'x-forwarded-for': `${uniqueClientIp()}, ${client}` }), 200)
  t.equal(await requestLogin(trusted, { 'x-forwarded-for': `${uniqueClientIp()}, ${client}` }), 429, 'the address the trusted proxy saw is the key')

  // Headers that are not addresses are skipped, never used as keys.
  const fallback = uniqueClientIp()
  for (let i = 0; i < 10; i++) t.equal(await requestLogin(trusted, { 'cf-connecting-ip': `garbage-${i}`, 'x-real-ip': 'also garbage', 'x-forwarded-for': fallback }), 200)
  t.equal(await requestLogin(trusted, { 'cf-connecting-ip': 'garbage-x', 'x-forwarded-for': fallback }), 429)
})

t.test('a trusted peer over RPC: X-Forwarded-For is honoured', async (t) => {
  const client = uniqueClientIp()
  for (let i = 0; i < 10; i++) t.equal(await rpcCode(rpcClient(trusted, AuthService, { clientIp: client }).requestLogin({ email: uniqueEmail() })), 'ok')
  t.equal(await rpcCode(rpcClient(trusted, AuthService, { clientIp: client }).requestLogin({ email: uniqueEmail() })), Code.ResourceExhausted)
  t.equal(await rpcCode(rpcClient(trusted, AuthService, { clientIp: uniqueClientIp() }).requestLogin({ email: uniqueEmail() })), 'ok')
})

t.test('a peer outside TRUST_PROXY is untrusted even when another peer is trusted', async (t) => {
  const peer = '203.0.113.77'
  for (let i = 0; i < 10; i++) t.equal(await requestLogin(trusted, { 'x-forwarded-for': uniqueClientIp() }, peer), 200)
  t.equal(await requestLogin(trusted, { 'x-forwarded-for': uniqueClientIp(), 'x-real-ip': uniqueClientIp() }, peer), 429)
})

t.test('IPv6 clients are keyed by their /64', async (t) => {
  for (let i = 0; i < 10; i++) t.equal(await requestLogin(untrusted, {}, `2001:db8:aa:bb::${(i + 1).toString(16)}`), 200)
  t.equal(await requestLogin(untrusted, {}, '2001:db8:aa:bb:ffff:1:2:3'), 429, 'another address in the same /64')
  t.equal(await requestLogin(untrusted, {}, '2001:db8:aa:bc::1'), 200, 'the next /64')
  for (let i = 0; i < 10; i++) t.equal(await requestLogin(trusted, { 'x-forwarded-for': `2001:db8:cc:dd::${i + 1}` }), 200)
  t.equal(await requestLogin(trusted, { 'x-real-ip': '2001:db8:cc:dd:1::1' }), 429, 'forwarded IPv6 too')
})

t.test('the memory counters are bounded: expired windows are swept, live ones capped', async (t) => {
  const counters = new MemoryCounters(1_000)
  let now = 1_000_000
  for (let i = 0; i < 50_000; i++) counters.hit(`ip:${i}`, 60_000, now)
  t.ok(counters.size <= 1_000, `50 000 keys in one window leave ${counters.size} entries`)
  const kept = counters.hit('ip:recent', 60_000, now)
  t.equal(counters.hit('ip:recent', 60_000, now).count, kept.count + 1, 'the most recent window survives eviction')
  now += 60_000
  counters.hit('ip:later', 60_000, now)
  t.equal(counters.size, 1, 'every expired window is gone once time passes')
  t.equal(counters.hit('ip:later', 60_000, now + 59_999).count, 2)
  t.equal(counters.hit('ip:later', 60_000, now + 60_000).count, 1, 'a new window once the old one ended')
})

t.test('CLIENT_IP_HEADERS: only the listed headers, in the listed order (DECISIONS §16)', async (t) => {
  // Behind a load balancer that only appends X-Forwarded-For, the operator lists that header alone.
  const xffOnly = await startApp({ TRUST_PROXY: '127.0.0.1', CLIENT_IP_HEADERS: 'x-forwarded-for' }, { database })
  t.teardown(xffOnly.close)
  const client = uniqueClientIp()
  for (let i = 0; i < 10; i++) t.equal(await requestLogin(xffOnly, { 'x-forwarded-for': client, 'cf-connecting-ip': uniqueClientIp(), 'x-real-ip': uniqueClientIp() }), 200)
  t.equal(await requestLogin(xffOnly, { 'x-forwarded-for': client, 'cf-connecting-ip': uniqueClientIp() }), 429, 'a made-up CF-Connecting-IP gains no fresh bucket')
  t.equal(await requestLogin(xffOnly, { 'x-forwarded-for': client, 'x-real-ip': uniqueClientIp() }), 429, 'nor a made-up X-Real-IP')

  // Another order: X-Real-IP first, the CDN header second, X-Forwarded-For never.
  const reordered = await startApp({ TRUST_PROXY: '127.0.0.1', CLIENT_IP_HEADERS: 'X-Real-IP, CF-Connecting-IP' }, { database })
  t.teardown(reordered.close)
  const real = uniqueClientIp()
  for (let i = 0; i < 10; i++) t.equal(await requestLogin(reordered, { 'x-real-ip': real, 'cf-connecting-ip': uniqueClientIp(), 'x-forwarded-for': uniqueClientIp() }), 200)
  t.equal(await requestLogin(reordered, { 'x-real-ip': real, 'cf-connecting-ip': uniqueClientIp() }), 429, 'X-Real-IP is read first')
  const cdn = uniqueClientIp()
  for (let i = 0; i < 10; i++) t.equal(await requestLogin(reordered, { 'cf-connecting-ip': cdn, 'x-forwarded-for': uniqueClientIp() }), 200)
  t.equal(await requestLogin(reordered, { 'cf-connecting-ip': cdn, 'x-forwarded-for': uniqueClientIp() }), 429, 'then the CDN header; X-Forwarded-For is not listed')
  const peer = '198.51.100.77'
  for (let i = 0; i < 10; i++) t.equal(await requestLogin(reordered, { 'x-forwarded-for': uniqueClientIp() }, '127.0.0.1'), 200)
  t.equal(await requestLogin(reordered, { 'x-forwarded-for': uniqueClientIp() }, '127.0.0.1'), 429, 'none listed present: the proxy\'s own address')
  t.equal(await requestLogin(untrusted, { 'x-real-ip': uniqueClientIp() }, peer), 200, '(an untrusted peer is its own client, as ever)')
})

t.test('CLIENT_IP_HEADERS and the retired CDN_IP_HEADER at start', async (t) => {
  const failure = (env: Record<string, string>): unknown => {
    try {
      loadConfig(testEnv(env, { migrated: false }))
    } catch (error) {
      return error
    }
    return undefined
  }
  const retired = failure({ CDN_IP_HEADER: 'true-client-ip' })
  t.ok(retired instanceof ConfigError && retired.variable === 'CDN_IP_HEADER', 'a deployment still setting CDN_IP_HEADER does not start')
  t.match(String(retired), /CLIENT_IP_HEADERS/, 'and is told its replacement')
  for (const bad of ['x-real-ip,,x-forwarded-for', 'x real ip', 'x-real-ip,X-Real-IP']) {
    const error = failure({ CLIENT_IP_HEADERS: bad })
    t.ok(error instanceof ConfigError && error.variable === 'CLIENT_IP_HEADERS', `"${bad}" is refused naming CLIENT_IP_HEADERS`)
  }
  t.same(loadConfig(testEnv({}, { migrated: false })).clientIpHeaders, ['cf-connecting-ip', 'x-real-ip', 'x-forwarded-for'], 'the default: SPEC\'s order')
  t.same(loadConfig(testEnv({ CLIENT_IP_HEADERS: ' True-Client-IP , x-forwarded-for ' }, { migrated: false })).clientIpHeaders, ['true-client-ip', 'x-forwarded-for'])
})
