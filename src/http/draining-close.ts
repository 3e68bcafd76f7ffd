// How the listening port closes (SIGTERM, or app.close()): every request a client had already sent
// is answered, and the port is shut within a bound.
//
// 1. Connections still in the listen backlog were accepted by the kernel for the clients, whose
//    requests may already be written; closing the listening socket would reset them. So the port
//    keeps accepting until a turn of the event loop accepts no new connection (at most
//    BACKLOG_MAX_MS), and only then stops.
// 2. The closing of idle connections runs in the check phase, after a poll phase in which every
//    byte already waiting on a socket was read: a request that reached this host is parsed, and its
//    connection is busy, before anything is closed. Idle HTTP/1.1 connections are closed (busy ones
//    answer with `Connection: close`, set by the app); connections that have not sent a byte by
//    two looks in a row are dropped; an idle HTTP/2 session gets its GOAWAY; a busy one first a GOAWAY notice (last stream
//    2^31−1: open no more streams), then, once the client's PING answer shows it has seen it, the
//    final GOAWAY naming the last stream processed, so streams it sent before the notice are still
//    served.
// 3. What is still open after `drainMs` is cut.
import http2, { type ServerHttp2Session } from 'node:http2'
import type { SessionState } from './http2-sessions.js'
import type http from 'node:http'
import type net from 'node:net'

/** How long the port may keep accepting the backlog while connections keep arriving. */
const BACKLOG_MAX_MS = 1_000
/** While draining, connections that turned idle since the last look are closed this often. */
const SWEEP_EVERY_MS = 100
/** A session whose client does not answer the PING after the GOAWAY notice gets the final GOAWAY anyway. */
const NOTICE_ANSWER_MS = 1_000
const LAST_STREAM_ID = 2 ** 31 - 1

export interface Served {
  http1: http.Server
  sessions: Map<ServerHttp2Session, SessionState>
}

/** Makes `server.close()` drain as above; `onClosed` runs once the port and its connections are closed. */
export function closeByDraining (server: net.Server, served: Served, drainMs: number, onClosed: () => void): void {
  const sockets = new Set<net.Socket>()
  let accepted = 0
  server.on('connection', (socket: net.Socket) => {
    accepted++
    sockets.add(socket)
    socket.once('close', () => { sockets.delete(socket) })
  })
  const noticed = new WeakSet<ServerHttp2Session>()
  const silent = new WeakSet<net.Socket>()

  function closeIdle (): void {
    served.http1.closeIdleConnections()
    // A connection accepted in the last poll phase has not been read yet: silent at two looks in a row.
    for (const socket of sockets) {
      if (socket.bytesRead > 0) continue
      if (silent.has(socket)) socket.destroy()
      else silent.add(socket)
    }
    for (const [session, { open }] of served.sessions) {
      if (noticed.has(session) || session.closed || session.destroyed) continue
      const close = (): void => { if (!session.closed && !session.destroyed) session.close() }
      // With nothing in flight there is nothing to wait for (a client may close at the notice alone).
      if (open === 0) {
        close()
        continue
      }
      noticed.add(session)
      session.goaway(http2.constants.NGHTTP2_NO_ERROR, LAST_STREAM_ID)
      if (!session.ping(close)) close()
      setTimeout(close, NOTICE_ANSWER_MS).unref()
    }
  }

  const stopAccepting = server.close.bind(server)
  server.close = function close (callback?: (error?: Error) => void): net.Server {
    let sweep: NodeJS.Timeout | undefined
    const deadline = setTimeout(() => {
      served.http1.closeAllConnections()
      for (const session of served.sessions.keys()) session.destroy()
      for (const socket of sockets) socket.destroy()
    }, drainMs)
    deadline.unref()
    server.once('close', () => {
      clearInterval(sweep)
      clearTimeout(deadline)
      onClosed()
    })
    void acceptBacklog().then(() => {
      stopAccepting(callback)
      closeIdle()
      sweep = setInterval(() => { setImmediate(closeIdle) }, SWEEP_EVERY_MS)
      sweep.unref()
    })
    return server
  }

  async function acceptBacklog (): Promise<void> {
    const started = Date.now()
    let before: number
    do {
      before = accepted
      await afterPollPhase()
    } while (accepted !== before && Date.now() - started < BACKLOG_MAX_MS)
  }
}

/** Resolves in the check phase of the next turn of the event loop, after a poll phase that began
 *  after the call: every connection and byte waiting on a socket by then has been taken in. */
async function afterPollPhase (): Promise<void> {
  await new Promise<void>((resolve) => { setImmediate(() => { setImmediate(resolve) }) })
}
