// Uploading the way clients do (fetch with FormData, over real HTTP), and the ways they go wrong:
// hand-made multipart bodies, bodies cut short, connections dropped mid-upload, headers sent with
// a body that never follows.
import http from 'node:http'
import { randomBytes } from 'node:crypto'
import { lastMailTo, type TestApp } from './app.js'

/** Real files, as small as their formats allow. */
export const SAMPLES = {
  png: Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082', 'hex'),
  jpeg: Buffer.from('ffd8ffe000104a46494600010100000100010000ffdb004300080606070605080707070909080a0c140d0c0b0b0c1912130f141d1a1f1e1d1a1c1c20242e2720222c231c1c2837292c30313434341f27393d38323c2e333432ffc0000b080001000101011100ffc4001f0000010501010101010100000000000000000102030405060708090a0bffc400b5100002010303020403050504040000017d01020300041105122131410613516107227114328191a1082342b1c11552d1f02433627282090a161718191a25262728292a3435363738393a434445464748494a535455565758595a636465666768696a737475767778797a838485868788898a92939495969798999aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3c4c5c6c7c8c9cad2d3d4d5d6d7d8d9dae1e2e3e4e5e6e7e8e9eaf1f2f3f4f5f6f7f8f9faffda0008010100003f00fbd3ffd9', 'hex'),
  gif: Buffer.from('47494638396101000100800000000000ffffff21f90401000000002c00000000010001000002024401003b', 'hex'),
  webp: Buffer.from('524946461a000000574542505650384c0d0000002f0000001007101111888808fe0700', 'hex'),
  pdf: Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n'),
  text: Buffer.from('just some notes, nothing more\n'),
  html: Buffer.from('<!doctype html><html><body><script>alert(document.cookie)</script></body></html>\n'),
  svg: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.cookie)</script></svg>\n'),
  xmlSvg: Buffer.from('<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"></svg>\n')
}

/** A PNG signature and header followed by `size` bytes in all: a large file that sniffs as PNG. */
export function pngOfSize (size: number): Buffer {
  const file = Buffer.alloc(size)
  SAMPLES.png.copy(file, 0, 0, 33) // signature + IHDR chunk
  return file
}

export interface FilePart { name?: string, filename: string, content: Buffer, type?: string }
export type FormEntry = [name: string, value: string] | FilePart

/** A FormData the way a browser builds one; entries in order. */
export function formOf (...entries: FormEntry[]): FormData {
  const form = new FormData()
  for (const entry of entries) {
    if (Array.isArray(entry)) form.append(entry[0], entry[1])
    else form.append(entry.name ?? 'file', new Blob([new Uint8Array(entry.content)], { type: entry.type ?? 'application/octet-stream' }), entry.filename)
  }
  return form
}

/** The same form as raw bytes, for requests fetch cannot make (cut short, dropped, stalled). */
export function multipartBytes (...entries: FormEntry[]): { body: Buffer, contentType: string } {
  const boundary = `----canvas${randomBytes(8).toString('hex')}`
  const chunks: Buffer[] = []
  for (const entry of entries) {
    if (Array.isArray(entry)) {
      chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${entry[0]}"\r\n\r\n${entry[1]}\r\n`))
    } else {
      chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${entry.name ?? 'file'}"; filename="${entry.filename}"\r\nContent-Type: ${entry.type ?? 'application/octet-stream'}\r\n\r\n`), entry.content, Buffer.from('\r\n'))
    }
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`))
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` }
}

export interface Answer { status: number, headers: Headers, body: Buffer, json: () => { data?: Record<string, unknown>, error?: string, message?: string, details?: Array<{ field: string, issue: string }> } }

async function answerOf (res: Response): Promise<Answer> {
  const body = Buffer.from(await res.arrayBuffer())
  return { status: res.status, headers: res.headers, body, json: () => JSON.parse(body.toString()) }
}

export function uploadClient (t: TestApp) {
  const headersFor = (cookie: string | undefined, extra: Record<string, string> = {}): Record<string, string> => cookie === undefined ? extra : { cookie: `app_session=${cookie}`, ...extra }
  return {
    async post (cookie: string | undefined, body: FormData | string | Buffer, path = '/api/uploads', headers: Record<string, string> = {}): Promise<Answer> {
      return await answerOf(await fetch(`${t.url}${path}`, { method: 'POST', body: Buffer.isBuffer(body) ? new Uint8Array(body) : body, headers: headersFor(cookie, headers) }))
    },
    async get (cookie: string | undefined, urlOrPath: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Answer> {
      const path = urlOrPath.replace(t.config.appUrl, '')
      return await answerOf(await fetch(`${t.url}${path}`, { method, headers: headersFor(cookie, headers) }))
    },
    async delete (cookie: string | undefined, urlOrPath: string): Promise<Answer> {
      return await answerOf(await fetch(`${t.url}${urlOrPath.replace(t.config.appUrl, '')}`, { method: 'DELETE', headers: headersFor(cookie) }))
    }
  }
}

export interface RawOutcome {
  /** The answer, when one came. */
  status?: number
  body: string
  /** The connection ended without an answer, or with one cut off. */
  closed: boolean
}

/**
 * An HTTP/1.1 request whose body may be cut short: `send` bytes of `body` are written, then the
 * request ends (`then: 'end'`: the declared length is what was sent), is dropped (`'drop'`: the
 * connection is destroyed), or just waits for an answer (`'wait'`: a stalled client, or a request
 * answered before its body).
 */
export async function rawUpload (t: TestApp, options: { path?: string, cookie?: string, contentType: string, body: Buffer, send?: number, contentLength?: number, then: 'end' | 'drop' | 'wait', waitMs?: number }): Promise<RawOutcome> {
  const url = new URL(t.url)
  const send = options.send ?? options.body.length
  const length = options.contentLength ?? (options.then === 'end' ? send : options.body.length)
  return await new Promise((resolve) => {
    let settled = false
    const finish = (outcome: RawOutcome): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      request.destroy() // a request answered before its body was sent is over
      resolve(outcome)
    }
    const timer = setTimeout(() => { request.destroy(); finish({ body: '', closed: true }) }, options.waitMs ?? 10_000)
    const request = http.request({
      host: url.hostname,
      port: url.port,
      method: 'POST',
      path: options.path ?? '/api/uploads',
      headers: { 'content-type': options.contentType, 'content-length': String(length), ...(options.cookie === undefined ? {} : { cookie: `app_session=${options.cookie}` }) }
    }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => { finish({ status: res.statusCode, body: Buffer.concat(chunks).toString(), closed: false }) })
      res.on('error', () => { finish({ status: res.statusCode, body: Buffer.concat(chunks).toString(), closed: true }) })
    })
    request.on('error', () => { finish({ body: '', closed: true }) })
    request.flushHeaders()
    if (send > 0) request.write(options.body.subarray(0, send))
    if (options.then === 'end') request.end()
    // Dropped once what was written has left: the server has started on the file.
    if (options.then === 'drop') setTimeout(() => { request.destroy(); finish({ body: '', closed: true }) }, 300)
  })
}

/** Polls until `check` holds (or fails the wait after `ms`). */
export async function eventually (check: () => boolean | Promise<boolean>, ms = 10_000): Promise<boolean> {
  const until = Date.now() + ms
  while (Date.now() < until) {
    if (await check()) return true
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  return await check()
}

/** Confirmed account deletion through REST (the mailed token). */
export async function deleteAccount (t: TestApp, cookie: string, email: string): Promise<number> {
  const requested = await t.app.inject({ method: 'POST', url: '/api/auth/request-deletion', cookies: { app_session: cookie } })
  if (requested.statusCode !== 200) throw new Error(`request-deletion: ${requested.statusCode}`)
  const confirmed = await t.app.inject({ method: 'POST', url: '/api/auth/confirm-deletion', payload: { token: lastMailTo(t.config, email).token } })
  return confirmed.statusCode
}
