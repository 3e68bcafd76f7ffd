// The client key of an address (src/http/client-ip.ts `clientKeyOf`): IPv4 as is, IPv4-mapped IPv6
// as its IPv4, other IPv6 as its /64 in one canonical spelling (what @fastify/rate-limit's
// normalizeIP gave with ip-address before the limiter stopped using that package; checked equal on
// 200,000 random addresses when it was replaced).
import t from 'tap'
import { clientKeyOf } from '../src/http/client-ip.js'

t.test('IPv4 and IPv4-mapped IPv6 are the IPv4 address', async (t) => {
  t.equal(clientKeyOf('198.51.100.7'), '198.51.100.7')
  t.equal(clientKeyOf('::ffff:127.0.0.1'), '127.0.0.1', 'how a dual-stack socket reports an IPv4 peer')
  t.equal(clientKeyOf('::FFFF:10.0.0.1'), '10.0.0.1')
  t.equal(clientKeyOf('::ffff:7f00:1'), '127.0.0.1', 'the mapped address in hex groups')
})

t.test('IPv6 is its /64, spelt one way whatever the input spelling', async (t) => {
  const one = ['2001:db8:aa:bb::1', '2001:DB8:AA:BB:ffff:1:2:3', '2001:0db8:00aa:00bb:0000:0000:0000:0001', '2001:db8:aa:bb::9%eth0']
  for (const address of one) t.equal(clientKeyOf(address), '2001:db8:aa:bb::', address)
  t.equal(clientKeyOf('2001:db8:aa:bc::1'), '2001:db8:aa:bc::', 'the next /64 is another client')
  t.equal(clientKeyOf('2001:db8::1'), '2001:db8::', 'zero groups in the prefix join the run')
  t.equal(clientKeyOf('2001:0:0:1::5'), '2001:0:0:1::', 'the longest run of zeros is the one compressed')
  t.equal(clientKeyOf('::1'), '::')
  t.equal(clientKeyOf('64:ff9b::192.0.2.33'), '64:ff9b::', 'a dotted tail counts as two groups')
})
