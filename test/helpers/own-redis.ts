// A redis-server of the test's own on a free port (no persistence), which the test may kill, restart,
// pause (SIGSTOP) and resume (SIGCONT) — never the machine's shared Redis.
import { spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'

export interface OwnRedis {
  readonly url: string
  readonly port: number
  /** SIGKILL: connections drop at once. */
  kill (): Promise<void>
  /** Starts it again on the same port (empty: no persistence). */
  restart (): Promise<void>
  /** SIGSTOP: connections stay open but nothing answers. */
  pause (): void
  resume (): void
  stop (): Promise<void>
}

export async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = typeof address === 'object' && address !== null ? address.port : 0
      server.close(() => { resolve(port) })
    })
  })
}

async function launch (port: number): Promise<ChildProcess> {
  return await launchRedisProcess('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], 'Ready to accept connections')
}

/** Starts `redis-server` or `redis-sentinel` with `args`; resolves once its output shows `ready`. */
export async function launchRedisProcess (program: string, args: string[], ready: string): Promise<ChildProcess> {
  const child = spawn(program, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  await new Promise<void>((resolve, reject) => {
    let out = ''
    const timer = setTimeout(() => {
      child.kill('SIGKILL') // never left running behind a failed start
      reject(new Error(`${program} ${args.join(' ')} did not start: ${out}`))
    }, 10_000)
    child.stdout?.on('data', (chunk: Buffer) => {
      out = (out + chunk.toString()).slice(-8_000)
      if (out.includes(ready)) { clearTimeout(timer); resolve() }
    })
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`${program} exited with ${String(code)}: ${out}`)) })
  })
  child.stdout?.resume()
  child.stderr?.resume()
  return child
}

/** Sends `signal` (after SIGCONT, should it be paused) and waits for the process to exit. */
export async function ended (child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGCONT')
  child.kill(signal)
  await exited
}

export async function startOwnRedis (): Promise<OwnRedis> {
  const port = await freePort()
  let child = await launch(port)
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    kill: async () => { await ended(child, 'SIGKILL') },
    restart: async () => { await ended(child, 'SIGKILL'); child = await launch(port) },
    pause: () => { child.kill('SIGSTOP') },
    resume: () => { child.kill('SIGCONT') },
    stop: async () => { await ended(child, 'SIGTERM') }
  }
}
