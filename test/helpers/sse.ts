// A real SSE client for tests: fetch against the listening server and an incremental parser of the
// text/event-stream format (fields `event`, `id`, `data`, `retry`, comments), so a test can read
// status and headers, wait for messages, and prove an absence by waiting for a later marker. The
// parser alone (`sseParser`) serves clients that pace their own reading (test/sync.pacing.test.ts).
import { comparePositions, LOG_START, parsePosition } from '../../src/live/log-position.js'

export interface SseMessage {
  /** `message` for default-type messages. */
  event: string
  id: string | undefined
  data: string
  /** `data` parsed as JSON. */
  json: { type?: string, payload?: Record<string, unknown>, timestamp?: string, userId?: string, [key: string]: unknown }
}

export interface SseStream {
  readonly status: number
  readonly headers: Headers
  /** Every message received so far, in order. */
  readonly messages: SseMessage[]
  /** Comment lines (without the colon and its space), each with how many messages came before it. */
  readonly comments: Array<{ text: string, after: number }>
  /** Default-type messages only (no heartbeats). */
  events (): SseMessage[]
  waitFor (match: (message: SseMessage) => boolean, timeoutMs?: number): Promise<SseMessage>
  /** Resolves when the server ends the stream. */
  readonly ended: Promise<void>
  close (): void
}

export interface SseOptions {
  cookie?: string
  bearer?: string
  lastEventId?: string
  headers?: Record<string, string>
}

/** Opens `${origin}/api/sync/subscribe`; resolves once the response headers arrived (the stream is subscribed). */
export async function openStream (origin: string, options: SseOptions = {}): Promise<SseStream> {
  const headers: Record<string, string> = { accept: 'text/event-stream', ...options.headers }
  if (options.cookie !== undefined) headers.cookie = `app_session=${options.cookie}`
  if (options.bearer !== undefined) headers.authorization = `Bearer ${options.bearer}`
  if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId
  const abort = new AbortController()
  const response = await fetch(`${origin}/api/sync/subscribe`, { headers, signal: abort.signal })
  const messages: SseMessage[] = []
  const comments: Array<{ text: string, after: number }> = []
  const waiters = new Set<() => void>()
  let isEnded = false
  let endedResolve!: () => void
  const ended = new Promise<void>((resolve) => { endedResolve = resolve })

  async function pump (): Promise<void> {
    if (response.body === null) return
    const decoder = new TextDecoder()
    const parse = sseParser((message) => {
      messages.push(message)
      for (const wake of waiters) wake()
    }, (text) => { comments.push({ text, after: messages.length }) })
    try {
      for await (const chunk of response.body) parse(decoder.decode(chunk as Uint8Array, { stream: true }))
    } catch {
      // aborted by close()
    } finally {
      isEnded = true
      endedResolve()
      for (const wake of waiters) wake()
    }
  }
  if (response.ok) void pump()
  else { isEnded = true; endedResolve() }

  return {
    status: response.status,
    headers: response.headers,
    messages,
    comments,
    events: () => messages.filter((m) => m.event === 'message'),
    ended,
    async waitFor (match, timeoutMs = 5_000) {
      const found = messages.find(match)
      if (found !== undefined) return found
      return await new Promise<SseMessage>((resolve, reject) => {
        const timer = setTimeout(() => { waiters.delete(check); reject(new Error(`timed out waiting for a message; got ${JSON.stringify(messages.map((m) => m.json.type ?? m.event))}`)) }, timeoutMs)
        function check (): void {
          const hit = messages.find(match)
          if (hit !== undefined) {
            clearTimeout(timer)
            waiters.delete(check)
            resolve(hit)
          } else if (isEnded) {
            clearTimeout(timer)
            waiters.delete(check)
            reject(new Error(`stream ended before the message arrived; got ${JSON.stringify(messages.map((m) => m.json.type ?? m.event))}`))
          }
        }
        waiters.add(check)
      })
    },
    close () {
      abort.abort()
      if (!response.ok) void response.body?.cancel().catch(() => {})
    }
  }
}

/**
 * An incremental parser of the text/event-stream format (fields `event`, `id`, `data`; comments):
 * feed it text as it arrives, in any pieces.
 */
export function sseParser (onMessage: (message: SseMessage) => void, onComment: (text: string) => void = () => {}): (text: string) => void {
  let buffer = ''
  let event = ''
  let id: string | undefined
  let data: string[] = []
  return (text) => {
    buffer += text
    let newline: number
    while ((newline = buffer.indexOf('\n')) !== -1) {
      const line = buffer.slice(0, newline).replace(/\r$/, '')
      buffer = buffer.slice(newline + 1)
      if (line === '') {
        if (data.length > 0) {
          const joined = data.join('\n')
          let json: SseMessage['json'] = {}
          try { json = JSON.parse(joined) as SseMessage['json'] } catch {}
          onMessage({ event: event === '' ? 'message' : event, id, data: joined, json })
        }
        event = ''
        id = undefined
        data = []
        continue
      }
      if (line.startsWith(':')) {
        onComment(line.slice(1).replace(/^ /, ''))
        continue
      }
      const colon = line.indexOf(':')
      const field = colon === -1 ? line : line.slice(0, colon)
      const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '')
      if (field === 'event') event = value
      else if (field === 'id') id = value
      else if (field === 'data') data.push(value)
    }
  }
}

/** Messages of the given event type. */
export const ofType = (type: string) => (m: SseMessage): boolean => m.event === 'message' && m.json.type === type

export const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

/** SSE ids are log positions (src/live/log-position.ts): each a stream receives is later than the one before. */
export function positionsIncrease (on: Pick<SseStream, 'events'>): boolean {
  const positions = on.events().filter((m) => m.id !== undefined).map((m) => parsePosition(m.id ?? '') ?? LOG_START)
  return positions.every((position, i) => i === 0 || comparePositions(position, positions[i - 1] ?? LOG_START) > 0)
}
