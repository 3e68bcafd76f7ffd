// The hole issue 26 item 5 saw, through a real proxy: nginx (a process of the test's own, on a free
// port) in front of two instances that share their counters in Redis, configured as most load
// balancers are — it appends the peer to X-Forwarded-For and passes every other header through.
// With the default CLIENT_IP_HEADERS a client that sends its own CF-Connecting-IP chooses its key
// and gets a fresh strict-tier allowance each time; once the operator lists only x-forwarded-for
// (DECISIONS §16), the made-up header gains nothing. The client connects from 127.0.0.2, so its
// address is not nginx's own (127.0.0.1, the instances' TRUST_PROXY). Skipped where nginx is absent.
import t, { type Test } from 'tap'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/database.js'
import { buildApp } from '../src/app.js'
import { testEnv, uniqueClientIp, uniqueEmail } from './helpers/app.js'
import { freePort, startOwnRedis } from './helpers/own-redis.js'
import { temporaryDir } from './helpers/temp-dirs.js'

const NGINX = '/usr/sbin/nginx'
const hasNginx = spawnSync(NGINX, ['-v']).status === 0
/** Each test is skipped, saying why, where nginx is absent. */
const options = { skip: hasNginx ? false : `nginx is not installed (${NGINX}; Debian package nginx-light): nothing to put in front of the instances` }

/** nginx as a plain load balancer: round robin over the instances, X-Forwarded-For appended. */
async function startNginx (upstreams: string[]): Promise<{ port: number, stop: () => Promise<void> }> {
  const dir = temporaryDir('canvas-nginx-')
  const port = await freePort()
  writeFileSync(join(dir, 'nginx.conf'), `
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream instances { ${upstreams.map((u) => `server ${new URL(u).host};`).join(' ')} }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://instances;
      proxy_http_version 1.1;
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
    }
  }
}
`)
  const child: ChildProcess = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const exited = new Promise<void>((resolve) => { child.once('exit', () => { resolve() }) })
  for (let attempt = 0; ; attempt++) {
    try {
      await post(port, '/health', undefined, {}, 'GET')
      break
    } catch (error) {
      if (attempt > 100 || child.exitCode !== null) throw new Error(`nginx did not start: ${stderr} ${String(error)}`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
  return { port, stop: async () => { child.kill('SIGTERM'); await exited } }
}

/** A request through nginx from 127.0.0.2 (a client that is not the proxy); resolves to its status. */
async function post (port: number, path: string, body: unknown, headers: Record<string, string>, method = 'POST'): Promise<number> {
  return await new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body)
    const req = request({ host: '127.0.0.1', port, path, method, localAddress: '127.0.0.2', headers: { ...headers, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) } }, (res) => {
      res.resume()
      res.on('end', () => { resolve(res.statusCode ?? 0) })
    })
    req.on('error', reject)
    req.end(payload)
  })
}

/** Requests each instance of the last cluster answered. */
let answered: number[] = []

async function cluster (t: Test, clientIpHeaders: string | undefined): Promise<number> {
  const prefix = `test-nginx-${randomUUID()}:`
  const env = { TRUST_PROXY: '127.0.0.1', RATE_LIMIT_KEY_PREFIX: prefix, REDIS_URL: redisUrl, CLIENT_IP_HEADERS: clientIpHeaders }
  const urls: string[] = []
  answered = [0, 0]
  for (let i = 0; i < 2; i++) {
    const app = await buildApp(loadConfig(testEnv(env, { migrated: false })), { database })
    app.addHook('onResponse', async () => { answered[i]!++ })
    urls.push(await app.listen({ port: 0, host: '127.0.0.1' }))
    t.teardown(async () => { await app.close() })
  }
  const nginx = await startNginx(urls)
  t.teardown(nginx.stop)
  return nginx.port
}

const database = await openDatabase(loadConfig(testEnv()))
t.teardown(async () => { await database.close() })
const ownRedis = process.env.REDIS_URL === undefined ? await startOwnRedis() : undefined
if (ownRedis !== undefined) t.teardown(ownRedis.stop)
const redisUrl = process.env.REDIS_URL ?? ownRedis?.url

/** Sign-in requests (strict tier, 10 a minute per address), the 11th to 13th with a made-up CF-Connecting-IP. */
async function signIns (port: number): Promise<number[]> {
  const statuses: number[] = []
  for (let i = 1; i <= 13; i++) {
    statuses.push(await post(port, '/api/auth/request-login', { email: uniqueEmail('nginx') }, i > 10 ? { 'cf-connecting-ip': uniqueClientIp() } : {}))
  }
  return statuses
}

t.test('the default headers behind nginx: a made-up CF-Connecting-IP gets a fresh allowance (the hole an operator closes)', options, async (t) => {
  const statuses = await signIns(await cluster(t, undefined))
  t.same(statuses, Array(13).fill(200), `every made-up address is a new client: ${statuses.join(' ')}`)
})

t.test('CLIENT_IP_HEADERS=x-forwarded-for behind nginx: the 11th sign-in and on are 429 whatever CF-Connecting-IP says', options, async (t) => {
  const statuses = await signIns(await cluster(t, 'x-forwarded-for'))
  t.same(statuses, [...Array(10).fill(200), 429, 429, 429], statuses.join(' '))
  t.ok(answered.every((count) => count >= 5), `both instances answered, counting in one Redis (${answered.join(' + ')})`)
})
