// Node's fetch (undici) from a process of its own, for tests of what a client sees when the server
// answers before the body is sent: in the server's process the client's writes and the server's
// reads would take turns on one event loop and never race. Run with `node --import=tsx`, one JSON
// argument (TriesSpec); prints one JSON line (TryOutcome[]). `runFetchTries` does that from a test.
import { spawn } from 'node:child_process'

export interface TriesSpec {
  url: string
  tries: number
  headers?: Record<string, string>
  /** A multipart form, built as a browser builds one: fields, then a PNG-looking file of `fileBytes`. */
  form?: { fields: Array<[string, string]>, fileBytes: number }
  /** A JSON body of about this many bytes (`{"name":"xxx…"}`). */
  jsonBytes?: number
}

export type TryOutcome = { status: number, body: string } | { error: string }

/** A PNG signature and header followed by zeros, `size` bytes in all (as helpers/uploads.ts makes
 *  them; repeated here so this process loads nothing of the app). */
export function pngBytes (size: number): Uint8Array<ArrayBuffer> {
  const file = new Uint8Array(size)
  file.set(Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489', 'hex'))
  return file
}

async function once (spec: TriesSpec): Promise<TryOutcome> {
  let body: FormData | string | undefined
  const headers = { ...spec.headers }
  if (spec.form !== undefined) {
    const form = new FormData()
    for (const [name, value] of spec.form.fields) form.append(name, value)
    form.append('file', new Blob([pngBytes(spec.form.fileBytes)], { type: 'image/png' }), 'a.png')
    body = form
  } else if (spec.jsonBytes !== undefined) {
    body = JSON.stringify({ name: 'x'.repeat(spec.jsonBytes) })
    headers['content-type'] = 'application/json'
  }
  try {
    const res = await fetch(spec.url, { method: 'POST', headers, body })
    return { status: res.status, body: await res.text() }
  } catch (error) {
    const cause = (error as { cause?: { code?: string, message?: string } }).cause
    return { error: cause?.code ?? cause?.message ?? String(error) }
  }
}

/** Runs the tries in a child process and returns what each one got. */
export async function runFetchTries (spec: TriesSpec): Promise<TryOutcome[]> {
  const child = spawn(process.execPath, ['--import=tsx', import.meta.filename, JSON.stringify(spec)], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString() })
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve))
  if (code !== 0) throw new Error(`fetch-tries exited with ${String(code)}`)
  return JSON.parse(out) as TryOutcome[]
}

if (process.argv[1] === import.meta.filename) {
  const spec = JSON.parse(process.argv[2] ?? '{}') as TriesSpec
  const outcomes: TryOutcome[] = []
  for (let i = 0; i < spec.tries; i++) outcomes.push(await once(spec))
  process.stdout.write(JSON.stringify(outcomes) + '\n')
}
