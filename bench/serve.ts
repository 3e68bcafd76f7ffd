// A benchmark target in its own process: the service (`serve.ts service`), the raw node:http
// baseline (`serve.ts raw`), raw node:http with pg running the service's room query (`serve.ts
// raw-pg`: GET /api/rooms/:roomId, what bench/deployed.ts compares the REST route with) or the bare frameworks (`serve.ts frameworks`: one Fastify route and
// one Connect method through @connectrpc/connect-fastify, no app code, to show what the RPC
// gateway's library costs per call before any of ours runs). Prints `listening <url>` once ready. Configuration comes from the
// environment (DATABASE_URL, REDIS_URL, DATA_DIR, …) exactly as for `npm start`.
import { createServer } from 'node:http'
import pg from 'pg'
import { fastifyConnectPlugin } from '@connectrpc/connect-fastify'
import Fastify from 'fastify'
import { AuthService } from '../src/gen/app/auth/v1/auth_pb.js'
import { UNLIMITED_TIERS, importBuilt } from './harness.js'

const kind = process.argv[2] ?? 'service'

if (kind === 'raw') {
  const body = JSON.stringify({ data: { id: 'user_baseline', email: 'baseline@example.test', displayName: 'baseline', avatarUrl: '', createdAt: new Date().toISOString() } })
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) })
    res.end(body)
  })
  server.listen(0, '127.0.0.1', () => {
    const address = server.address()
    if (address !== null && typeof address === 'object') console.log(`listening http://127.0.0.1:${address.port}`)
  })
} else if (kind === 'raw-pg') {
  // The statement the service sends for GET /api/rooms/:roomId (findRoom in src/core/rooms/
  // rooms.repository.ts, through Kysely), on a pool of the service's default size, answered as the
  // route answers (the room's fields in `{ data }`); no session, no limiter, no logs.
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.DATABASE_POOL_SIZE ?? 10) })
  const server = createServer((req, res) => {
    const roomId = /^\/api\/rooms\/([^/?]+)/.exec(req.url ?? '')?.[1]
    pool.query<{ id: string, name: string, description: string | null, is_public: boolean, created_by: string, created_at: Date, updated_at: Date }>('select * from "rooms" where "id" = $1', [roomId]).then(({ rows: [row] }) => {
      if (row === undefined) {
        res.writeHead(404).end()
        return
      }
      const body = JSON.stringify({ data: { id: row.id, name: row.name, ...(row.description === null ? {} : { description: row.description }), isPublic: row.is_public, createdBy: row.created_by, createdAt: row.created_at.toISOString(), updatedAt: row.updated_at.toISOString() } })
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) })
      res.end(body)
    }, () => { res.writeHead(503).end() })
  })
  server.listen(0, '127.0.0.1', () => {
    const address = server.address()
    if (address !== null && typeof address === 'object') console.log(`listening http://127.0.0.1:${address.port}`)
  })
  process.on('SIGTERM', () => { server.close(); void pool.end().then(() => process.exit(0)) })
} else if (kind === 'frameworks') {
  const app = Fastify()
  app.post('/ping', async (request) => ({ message: (request.body as { message: string }).message, timestamp: new Date().toISOString() }))
  await app.register(fastifyConnectPlugin, {
    prefix: '/rpc',
    routes: (router) => { router.service(AuthService, { ping: (request) => ({ message: request.message, timestamp: new Date().toISOString() }) }) }
  })
  console.log(`listening ${await app.listen({ port: 0, host: '127.0.0.1' })}`)
  process.on('SIGTERM', () => { void app.close().then(() => process.exit(0)) })
} else {
  // One bench user sends thousands of requests a minute: tier limits are raised (build option, not
  // configuration) so every answer is a real one, not a 429. bench/ratelimit.ts measures the limiter.
  // BENCH_TIERS=real keeps SPEC's limits (bench/admission.ts spreads its load over many users instead).
  const { buildApp, loadConfig } = await importBuilt()
  const realTiers = process.env.BENCH_TIERS === 'real'
  // BENCH_LIMITER=off builds the app without the limiter (the figures beside the deployed ones).
  const limiterOff = process.env.BENCH_LIMITER === 'off'
  // BENCH_LOG_LEVEL=info logs as `npm start` does (to this process's stdout, which the harness drains).
  const app = await buildApp(loadConfig({ ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'silent' }), limiterOff ? { rateLimit: false } : realTiers ? {} : { rateLimit: { maxOverride: UNLIMITED_TIERS } })
  console.log(`listening ${await app.listen({ port: 0, host: '127.0.0.1' })}`)
  process.on('SIGTERM', () => { void app.close().then(() => process.exit(0)) })
}
