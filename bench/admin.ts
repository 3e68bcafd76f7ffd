// `npx tsx bench/admin.ts` (issue 32): an admin list (`GET /api/admin/rooms`, Bearer token of a local
// OIDC provider, verified against its cached JWKS) against an ordinary authenticated read of the same
// size (`GET /api/rooms`, session cookie) in the same run (goal ≥ 0.8×: verification is the only added
// cost), and how many times the service fetched the JWKS during the whole run (goal: 1).
// BENCH_ROUNDS (2); each scenario runs 1 s of warm-up and 5 s measured (harness.ts `measure`).
import { startOidcProvider } from '../test/helpers/oidc-provider.js'
import { buildDist, measure, row, signIn, startTarget } from './harness.js'

buildDist()
const rounds = Number(process.env.BENCH_ROUNDS ?? 2)
console.log(`node ${process.version}`)
const provider = await startOidcProvider()
const target = await startTarget('service', { OIDC_ISSUER: provider.issuer, OIDC_AUDIENCE: provider.audience })
const started = Date.now()
try {
  const cookie = await signIn(target, 'bench-admin@example.test')
  for (let i = 0; i < 20; i++) {
    await fetch(`${target.url}/api/rooms`, { method: 'POST', headers: { cookie: `app_session=${cookie}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: `Room ${i}` }) })
  }
  const token = await provider.sign({ sub: 'bench-admin', roles: ['admin'], exp: Math.floor(Date.now() / 1000) + 3600 })
  for (let round = 1; round <= rounds; round++) {
    const baseline = await measure({ url: `${target.url}/api/rooms?limit=20`, headers: { cookie: `app_session=${cookie}` } })
    const admin = await measure({ url: `${target.url}/api/admin/rooms?limit=20`, headers: { authorization: `Bearer ${token}` } })
    console.log(`round ${round}`)
    console.log(row('GET /api/rooms (session cookie)', baseline))
    console.log(row('GET /api/admin/rooms (OIDC token)', admin, admin.rps / baseline.rps))
  }
  console.log(`JWKS fetches during the ${((Date.now() - started) / 1000).toFixed(0)} s run: ${provider.jwksFetches()}`)
} finally {
  await target.stop()
  await provider.close()
}
