// A TCP proxy in front of a server (Postgres), whose connections a test can turn into black holes:
// a frozen connection stays open on both sides and silently drops what either side sends, as a
// connection through a NAT box or a load balancer that forgot it (half-open) does. New connections
// keep working.
import { createServer, connect, type Socket } from 'node:net'

export interface TcpProxy {
  readonly port: number
  /** Freezes every open connection whose client's first bytes contain `marker`; how many. */
  freeze (marker: string): number
  close (): Promise<void>
}

interface Link { client: Socket, upstream: Socket, first: Buffer | undefined, frozen: boolean }

export async function startTcpProxy (target: { host: string, port: number }): Promise<TcpProxy> {
  const links = new Set<Link>()
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host)
    const link: Link = { client, upstream, first: undefined, frozen: false }
    links.add(link)
    client.on('data', (chunk) => {
      link.first ??= chunk
      if (!link.frozen) upstream.write(chunk)
    })
    upstream.on('data', (chunk) => { if (!link.frozen) client.write(chunk) })
    const drop = (): void => {
      links.delete(link)
      client.destroy()
      upstream.destroy()
    }
    // A frozen connection tells neither side that the other went away.
    client.on('close', () => { if (!link.frozen) drop() })
    upstream.on('close', () => { if (!link.frozen) drop() })
    client.on('error', () => {})
    upstream.on('error', () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  return {
    port,
    freeze (marker) {
      let frozen = 0
      for (const link of links) {
        if (!link.frozen && link.first?.includes(marker) === true) {
          link.frozen = true
          frozen++
        }
      }
      return frozen
    },
    async close () {
      for (const link of links) {
        link.client.destroy()
        link.upstream.destroy()
      }
      links.clear()
      await new Promise<void>((resolve) => server.close(() => { resolve() }))
    }
  }
}
