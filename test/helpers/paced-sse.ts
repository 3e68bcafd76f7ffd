// Event-stream clients that read at the pace a test says, over HTTP/1.1 or HTTP/2 (all they get,
// nothing, or a little at a time), and bursts of large events committed at once: what the pacing
// tests use (DECISIONS §17; test/sync.pacing.test.ts, test/sync.slow-readers.test.ts).
import type { Test } from 'tap'
import http from 'node:http'
import http2 from 'node:http2'
import type { Readable } from 'node:stream'
import type { Spark } from '../../src/core/sparks/sparks.types.js'
import { inTransaction } from '../../src/core/transaction.js'
import { uniqueClientIp, type TestApp } from './app.js'
import { signInPerson, type Person } from './people.js'
import { sleep, sseParser, type SseMessage } from './sse.js'

/** The content of each burst event, in characters (about the size of each event). */
export const EVENT_CHARS = 10_000

export type Protocol = 'HTTP/1.1' | 'HTTP/2'
export const PROTOCOLS: readonly Protocol[] = ['HTTP/1.1', 'HTTP/2']

/** An SSE client that reads at the pace the test says: all it gets, nothing (paused), or a little at a time. */
export interface PacedStream {
  readonly messages: SseMessage[]
  events (): SseMessage[]
  /** The response ended or was cut (seen only while reading). */
  readonly ended: Promise<void>
  pause (): void
  resume (): void
  /** Reads `bytes` of what has arrived every `everyMs`. */
  trickle (everyMs: number, bytes: number): void
  /** Waits until `count` `spark:updated` events arrived (the stream may also get the events of the
   *  test's setup, delivered after it opened). */
  waitForUpdates (count: number, timeoutMs?: number): Promise<void>
  close (): void
}

export async function openPaced (t: Test, s: TestApp, protocol: Protocol, person: Person, lastEventId?: string): Promise<PacedStream> {
  const headers: Record<string, string> = { accept: 'text/event-stream', cookie: `app_session=${person.cookie}`, 'x-forwarded-for': uniqueClientIp() }
  if (lastEventId !== undefined) headers['last-event-id'] = lastEventId
  let body: Readable
  let closeTransport: () => void
  if (protocol === 'HTTP/1.1') {
    const request = http.get(`${s.url}/api/sync/subscribe`, { headers, agent: false })
    body = await new Promise<http.IncomingMessage>((resolve, reject) => { request.once('response', resolve).once('error', reject) })
    closeTransport = () => { request.destroy() }
  } else {
    const session = http2.connect(s.url)
    session.on('error', () => {})
    const request = session.request({ ':path': '/api/sync/subscribe', ...headers })
    await new Promise<void>((resolve, reject) => { request.once('response', () => { resolve() }).once('error', reject) })
    body = request
    closeTransport = () => { request.destroy(); session.destroy() }
  }
  const messages: SseMessage[] = []
  const decoder = new TextDecoder()
  const parse = sseParser((message) => { messages.push(message) })
  const take = (chunk: Buffer): void => { parse(decoder.decode(chunk, { stream: true })) }
  let timer: NodeJS.Timeout | undefined
  const ended = new Promise<void>((resolve) => {
    body.once('end', resolve).once('close', resolve).once('error', () => { resolve() })
  })
  const stop = (): void => { clearInterval(timer); body.removeListener('data', take) }
  body.on('data', take)
  const paced: PacedStream = {
    messages,
    events: () => messages.filter((m) => m.event === 'message'),
    ended,
    pause () { stop(); body.pause() },
    resume () { stop(); body.on('data', take); body.resume() },
    trickle (everyMs, bytes) {
      stop()
      body.pause()
      timer = setInterval(() => {
        // read(0) asks the transport for more without taking any.
        const chunk = body.read(Math.min(bytes, body.readableLength)) as Buffer | null
        if (chunk !== null) take(chunk)
      }, everyMs)
    },
    async waitForUpdates (count, timeoutMs = 30_000) {
      const started = Date.now()
      while (titles(paced).length < count) {
        if (Date.now() - started > timeoutMs) throw new Error(`timed out with ${titles(paced).length} of ${count} events`)
        await sleep(20)
      }
    },
    close () { stop(); closeTransport() }
  }
  t.teardown(() => { paced.close() })
  return paced
}

export interface Room { owner: Person, roomId: string, spark: Spark }

export async function roomWithSpark (s: TestApp, label: string): Promise<Room> {
  const owner = await signInPerson(s, label)
  const roomId = (await owner.rest('POST', '/api/rooms', { name: label, isPublic: false })).json().data.id as string
  const spark = (await owner.rest('POST', '/api/sparks', { roomId, title: 'burst', content: '', x: 0, y: 0 })).json().data as Spark
  return { owner, roomId, spark }
}

/** `count` `spark:updated` events of ~10 KB in one commit, through the core's publish path (no API
 *  writes that many in one transaction). Titles are `${tag}-${i}`. */
export async function commitBurst (s: TestApp, { owner, roomId, spark }: Room, tag: string, count: number): Promise<void> {
  await inTransaction(s.app.deps, async (tx) => {
    for (let i = 0; i < count; i++) {
      const content = `${tag}-${i} `.padEnd(EVENT_CHARS, 'abcdefghij')
      tx.publish('spark:updated', { ...spark, title: `${tag}-${i}`, content }, { audience: { kind: 'room', roomId, sparkId: spark.id }, userId: owner.userId })
    }
  })
}

/** The titles of the `spark:updated` events a stream received, in order. */
export function titles (on: Pick<PacedStream, 'events'>): string[] {
  return on.events().filter((m) => m.json.type === 'spark:updated').map((m) => String(m.json.payload?.title))
}
export const burstTitles = (tag: string, count: number): string[] => Array.from({ length: count }, (_, i) => `${tag}-${i}`)
