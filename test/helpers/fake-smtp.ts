// A minimal SMTP server that takes a whole message and then refuses it (554) or, slowly, accepts
// it — so a test can see what the service tried to send, or hold a request in flight.
import { createServer, type Server } from 'node:net'

export interface FakeSmtp { url: string, received: string[], connected: Promise<void>, close (): Promise<void> }

export async function startFailingSmtp (): Promise<FakeSmtp> {
  return await startFakeSmtp({ accept: false, delayMs: 0 })
}

export async function startFakeSmtp (options: { accept: boolean, delayMs: number }): Promise<FakeSmtp> {
  const received: string[] = []
  let markConnected!: () => void
  const connected = new Promise<void>((resolve) => { markConnected = resolve })
  const server: Server = createServer((socket) => {
    let inData = false
    let buffer = ''
    markConnected()
    socket.write('220 fake ESMTP\r\n')
    socket.on('data', (chunk) => {
      buffer += chunk.toString('utf8')
      if (inData) {
        const end = buffer.indexOf('\r\n.\r\n')
        if (end === -1) return
        received.push(buffer.slice(0, end))
        buffer = buffer.slice(end + 5)
        inData = false
        const answer = options.accept ? '250 2.0.0 queued\r\n' : '554 5.0.0 delivery refused by test\r\n'
        setTimeout(() => { if (!socket.destroyed) socket.write(answer) }, options.delayMs)
        return
      }
      let newline: number
      while ((newline = buffer.indexOf('\r\n')) !== -1) {
        const line = buffer.slice(0, newline)
        buffer = buffer.slice(newline + 2)
        const verb = line.slice(0, 4).toUpperCase()
        if (verb === 'EHLO' || verb === 'HELO') socket.write('250 fake\r\n')
        else if (verb === 'DATA') { inData = true; socket.write('354 go ahead\r\n'); break } else if (verb === 'QUIT') { socket.end('221 bye\r\n'); return } else socket.write('250 ok\r\n')
      }
    })
    socket.on('error', () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no address')
  return {
    url: `smtp://127.0.0.1:${address.port}`,
    received,
    connected,
    close: async () => { await new Promise<void>((resolve) => server.close(() => { resolve() })) }
  }
}
