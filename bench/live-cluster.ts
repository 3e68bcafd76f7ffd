// Pieces of the live-stream benchmarks with several instances (bench/sse.ts, bench/eight.ts): service
// instances in processes of their own (bench/sse-serve.ts), the subscriber process
// (bench/sse-subscribers.ts) and its questions, mass sign-in, open-loop writes with their
// acknowledgement times, delivery reports, and nginx in front of the instances.
import { spawn, type ChildProcess } from 'node:child_process'
import { chmodSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { reapOnExit } from './harness.js'

export const now = (): number => performance.timeOrigin + performance.now()
export const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }
export const fixed = (n: number): string => Number.isFinite(n) ? n.toFixed(1).padStart(7) : '    n/a'

export function spawnScript (file: string, env: Record<string, string | undefined> = {}, flags: string[] = []): ChildProcess {
  return reapOnExit(spawn(process.execPath, [...flags, '--import=tsx', join(import.meta.dirname, file)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit', 'ipc']
  }))
}

/** The URL a child prints as `listening <url>`; what it writes after that (the service's log) is read and dropped. */
export async function listening (child: ChildProcess): Promise<string> {
  return await new Promise((resolve, reject) => {
    let out = ''
    const onData = (chunk: Buffer): void => {
      out += chunk.toString()
      const match = /(?:^|\n)listening (http\S+)/.exec(out)
      if (match?.[1] === undefined) return
      child.stdout?.off('data', onData)
      child.stdout?.resume()
      resolve(match[1])
    }
    child.stdout?.on('data', onData)
    child.once('exit', (code) => { reject(new Error(`exited with ${String(code)}`)) })
  })
}

/** One request at a time to the subscriber child. */
export async function ask<T> (child: ChildProcess, message: object): Promise<T> {
  const reply = new Promise<T>((resolve) => { child.once('message', (m) => { resolve(m as T) }) })
  child.send(message)
  return await reply
}

export interface Service { url: string, dataDir: string, child: ChildProcess, stop (): Promise<void> }

/** A service instance in its own process (bench/sse-serve.ts), sharing DATABASE_URL / REDIS_URL from the environment. */
export async function startService (env: Record<string, string>): Promise<Service> {
  const dataDir = mkdtempSync(join(tmpdir(), 'canvas-bench-sse-'))
  const child = spawnScript('sse-serve.ts', { NODE_ENV: 'production', JWT_SECRET: 'bench-secret-bench-secret-bench-secret-0123', DATA_DIR: dataDir, ...env }, ['--expose-gc'])
  const url = await listening(child)
  return {
    url,
    dataDir,
    child,
    stop: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
    }
  }
}

export const clientIp = (group: number): string => `10.${(group >> 16) & 255}.${(group >> 8) & 255}.${group & 255}`

/** Signs `count` users in through the mailed-link flow (the outbox of `target`); returns their session cookies. */
export async function signInMany (target: Service, count: number, label: string): Promise<string[]> {
  const outbox = join(target.dataDir, 'outbox')
  const seen = new Set<string>()
  const tokens = new Map<string, string>()
  const tokenFor = (email: string): string | undefined => {
    for (const file of readdirSync(outbox)) {
      if (seen.has(file)) continue
      try {
        const mail = JSON.parse(readFileSync(join(outbox, file), 'utf8')) as { to: string, text: string }
        const token = /token=([A-Za-z0-9_-]+)/.exec(mail.text)?.[1]
        if (token !== undefined) tokens.set(mail.to, token)
        seen.add(file)
      } catch {
        // still being written; read it next time
      }
    }
    return tokens.get(email)
  }
  const cookies: string[] = new Array<string>(count)
  let next = 0
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < count) {
      const i = next++
      const email = `${label}-${i}@bench.test`
      const headers = { 'content-type': 'application/json', 'x-forwarded-for': clientIp(60_000 + i) }
      const requested = await fetch(`${target.url}/api/auth/request-login`, { method: 'POST', headers, body: JSON.stringify({ email }) })
      if (!requested.ok) throw new Error(`request-login: ${requested.status}`)
      const token = tokenFor(email)
      const authorized = await fetch(`${target.url}/api/auth/authorize?token=${token ?? ''}`, { redirect: 'manual', headers })
      const cookie = /app_session=([^;]+)/.exec(authorized.headers.get('set-cookie') ?? '')?.[1]
      if (cookie === undefined) throw new Error(`authorize: ${authorized.status}`)
      cookies[i] = cookie
    }
  }))
  return cookies
}

/** A write's outcome: false when it failed, else true or the instance that took it (behind a load balancer). */
export type Write = (seq: number) => Promise<boolean | string>
export interface Drive { acks: Array<[number, number, string?]>, failures: number, failedWith: Map<string, number>, achievedRate: number }
let nextSeq = 1

/** Issues `rate × seconds` writes on schedule (open loop), recording each acknowledgement time (and writer). */
export async function drive (rate: number, seconds: number, write: Write): Promise<Drive> {
  const acks: Array<[number, number, string?]> = []
  const pending: Array<Promise<void>> = []
  let failures = 0
  const failedWith = new Map<string, number>()
  const failed = (why: string): void => {
    failures++
    failedWith.set(why, (failedWith.get(why) ?? 0) + 1)
  }
  const total = Math.round(rate * seconds)
  const start = now()
  for (let i = 0; i < total; i++) {
    const wait = start + i * 1000 / rate - now()
    if (wait >= 1) await sleep(wait)
    const seq = nextSeq++
    pending.push(write(seq).then((ok) => {
      if (ok === false) failed('refused')
      else acks.push(typeof ok === 'string' ? [seq, now(), ok] : [seq, now()])
    }, (error: unknown) => { failed(error instanceof Error ? `${error.message}${error.cause instanceof Error ? ` (${error.cause.message})` : ''}` : String(error)) }))
  }
  await Promise.all(pending)
  return { acks, failures, failedWith, achievedRate: total / ((now() - start) / 1000) }
}

export interface Summary { n: number, p50: number, p99: number, max: number }
export interface Report { received: number, p50: number, p99: number, max: number, duplicates: number, same: Summary, cross: Summary }

/** Waits until every expected message arrived, or none arrived for 3 s (those are counted as lost). */
export async function settle (subscribers: ChildProcess, expected: number): Promise<void> {
  let last = -1
  let still = now()
  for (;;) {
    const { received } = await ask<{ received: number }>(subscribers, { cmd: 'received' })
    if (received >= expected) return
    if (received !== last) {
      last = received
      still = now()
    } else if (now() - still > 3_000) {
      return
    }
    await sleep(100)
  }
}

export async function measure (subscribers: ChildProcess, connections: number, rate: number, seconds: number, write: Write): Promise<Report & Drive & { expected: number }> {
  // Warm-up (JIT, keep-alive connections), not counted.
  const warm = await drive(rate, Math.min(1, seconds), write)
  await settle(subscribers, warm.acks.length * connections)
  await ask<Report>(subscribers, { cmd: 'report', acks: warm.acks })
  const driven = await drive(rate, seconds, write)
  await settle(subscribers, driven.acks.length * connections)
  const report = await ask<Report>(subscribers, { cmd: 'report', acks: driven.acks })
  return { ...driven, ...report, expected: driven.acks.length * connections }
}

export function line (label: string, r: Report & Drive & { expected: number }): string {
  const lost = r.expected - r.received
  return `  ${label.padEnd(34)} p50 ${fixed(r.p50)} ms   p99 ${fixed(r.p99)} ms   max ${fixed(r.max)} ms   ` +
    `delivered ${r.received}/${r.expected}${lost === 0 ? '' : ` (LOST ${lost})`}${r.duplicates === 0 ? '' : ` DUPLICATED ${r.duplicates}`}   ` +
    `writes ${r.acks.length} at ${r.achievedRate.toFixed(0)}/s${r.failures > 0 ? ` (${r.failures} failed: ${[...r.failedWith].map(([why, n]) => `${why} ×${n}`).join(', ')})` : ''}`
}

/** Opens every stream (all must succeed); answers how many each instance behind a load balancer got. */
export async function openAll (subscribers: ChildProcess, targets: Array<{ url: string, headers: Record<string, string> }>): Promise<Record<string, number>> {
  const result = await ask<{ opened: number, failed: number, statuses: Record<string, number>, upstreams: Record<string, number> }>(subscribers, { cmd: 'open', targets })
  if (result.failed > 0) throw new Error(`could not open every stream: ${JSON.stringify(result.statuses)}`)
  return result.upstreams
}

export async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => { resolve(typeof address === 'object' && address !== null ? address.port : 0) })
    })
  })
}

/** nginx in front of `upstreams` (host:port), round robin, unbuffered (SSE), as a process of this benchmark's own. */
export async function startNginx (upstreams: string[]): Promise<{ url: string, stop (): void }> {
  const dir = mkdtempSync(join(tmpdir(), 'canvas-bench-nginx-'))
  chmodSync(dir, 0o777) // its workers run as nobody
  const port = await freePort()
  writeFileSync(join(dir, 'nginx.conf'), `
worker_processes 1;
worker_rlimit_nofile 65536;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 60000; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  upstream canvas {
${upstreams.map((u) => `    server ${u};`).join('\n')}
    keepalive 64;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://canvas;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_buffering off;
      proxy_read_timeout 1h;
      add_header X-Upstream $upstream_addr always;
    }
  }
}
`)
  const child = reapOnExit(spawn('nginx', ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdio: ['ignore', 'inherit', 'inherit'] }))
  const url = `http://127.0.0.1:${port}`
  for (let attempt = 0; ; attempt++) {
    try {
      if ((await fetch(`${url}/health`)).ok) break
    } catch {
      if (attempt > 100) throw new Error(`nginx did not answer on ${url} (see ${dir}/error.log)`)
      await sleep(100)
    }
  }
  return { url, stop: () => { child.kill('SIGTERM') } }
}
