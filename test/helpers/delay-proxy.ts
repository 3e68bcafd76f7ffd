// A TCP proxy in front of a server that holds every reply back by a fixed delay (a slow network or
// an overloaded server as clients see it: everything still arrives, in order, late). Requests go
// through at once. Used to make a Redis answer 50 ms late for as long as a test needs.
import { createConnection, createServer, type Server, type Socket } from 'node:net'

export interface DelayProxy {
  readonly port: number
  readonly url: string
  /** Replies are held back this long from now on (0: none). */
  delayMs: number
  close (): Promise<void>
}

export async function startDelayProxy (target: { host: string, port: number }, delayMs: number, scheme = 'redis'): Promise<DelayProxy> {
  const sockets = new Set<Socket>()
  const proxy: { delayMs: number } = { delayMs }
  const server: Server = createServer((client) => {
    const upstream = createConnection(target)
    for (const socket of [client, upstream]) {
      sockets.add(socket)
      socket.on('close', () => { sockets.delete(socket) })
      socket.on('error', () => { client.destroy(); upstream.destroy() })
    }
    client.on('data', (chunk) => { upstream.write(chunk) })
    // One queue per connection, drained in order, so replies keep their order when the delay changes.
    const queue: Array<{ dueAt: number, chunk: Buffer | null }> = []
    let timer: NodeJS.Timeout | undefined
    const drain = (): void => {
      timer = undefined
      while (queue.length > 0 && queue[0]!.dueAt <= performance.now()) {
        const { chunk } = queue.shift()!
        if (chunk === null) client.end()
        else if (!client.destroyed) client.write(chunk)
      }
      if (queue.length > 0) timer = setTimeout(drain, Math.max(0, queue[0]!.dueAt - performance.now()))
    }
    const pass = (chunk: Buffer | null): void => {
      queue.push({ dueAt: Math.max(performance.now() + proxy.delayMs, queue.at(-1)?.dueAt ?? 0), chunk })
      if (timer === undefined) drain()
    }
    upstream.on('data', pass)
    upstream.on('end', () => { pass(null) })
    client.on('end', () => { upstream.end() })
  })
  await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
  const address = server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  return {
    port,
    url: `${scheme}://127.0.0.1:${port}`,
    get delayMs () { return proxy.delayMs },
    set delayMs (ms: number) { proxy.delayMs = ms },
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => { server.close(() => { resolve() }) })
    }
  }
}
