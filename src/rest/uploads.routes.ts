// /api/uploads and /api/attachments (DECISIONS §9): upload a file (multipart), read it, delete it.
//
// Files are served so that no upload can act as a page of this origin: the type is the one sniffed
// from the bytes (never the client's claim) with `nosniff`; everything but a raster image is a
// download (`Content-Disposition: attachment`, SVG included); and a sandboxing CSP forbids script,
// styles, frames and requests even if a browser does render one. A file never changes under its
// id, so its id is its ETag.
import { Readable } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Core } from '../core/index.js'
import { FileIdParams } from '../core/uploads/uploads.types.js'
import { actorOf } from './identity.js'
import { UploadedFile, created, fileBytes, noContent } from './responses.js'
import { acceptMultipart, receiveUpload, uploadForm } from './upload-form.js'
import { matchesEtag } from './http-semantics.js'

/** Avatars are public and may sit in shared caches for a day; attachments only in the reader's own
 *  cache, for an hour. A deleted file may still be served from a cache until then. */
const CACHE_PUBLIC = 'public, max-age=86400'
const CACHE_PRIVATE = 'private, max-age=3600'
const SANDBOX = "default-src 'none'; sandbox"

/** `inline` or `attachment` with the file's name, in the plain form old clients read and the
 *  UTF-8 form (RFC 6266 / 8187) the others prefer. The name is already free of control characters. */
export function contentDisposition (disposition: 'inline' | 'attachment', filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\%]/g, '_')
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
  return `${disposition}; filename="${fallback}"; filename*=UTF-8''${encoded}`
}

export function uploadRoutes (core: Core) {
  return async function (app: FastifyInstance): Promise<void> {
    await acceptMultipart(app)
    const r = app.withTypeProvider<TypeBoxTypeProvider>()

    r.post('/uploads', { schema: { summary: 'Upload a file (multipart `file`)', tags: ['uploads'], body: uploadForm(), response: created(UploadedFile) }, config: { operation: 'uploads.upload', idempotent: true } }, async (request, reply) => {
      const file = await receiveUpload(core, request, reply)
      return await reply.code(201).send({ data: file })
    })

    r.post('/attachments', { schema: { summary: 'Upload an attachment (multipart `file`)', tags: ['uploads'], body: uploadForm('attachment'), response: created(UploadedFile) }, config: { operation: 'uploads.attach', idempotent: true, location: '/api/uploads' } }, async (request, reply) => {
      const file = await receiveUpload(core, request, reply, 'attachment')
      return await reply.code(201).send({ data: file })
    })

    r.get('/uploads/:fileId', { schema: { summary: "A file's bytes (public: its id is the capability)", tags: ['uploads'], response: fileBytes, params: FileIdParams }, config: { operation: 'uploads.get', etag: true } }, async (request, reply) => {
      const served = await core.uploads.open(request.actor, request.params)
      const notModified = matchesEtag(request.headers['if-none-match'], served.etag)
      // Opened before any header is set, so a storage failure answers a plain 503 envelope.
      const body = notModified || request.method === 'HEAD' ? undefined : await served.open()
      void reply.headers({
        etag: served.etag,
        'cache-control': served.readableByAnyone ? CACHE_PUBLIC : CACHE_PRIVATE,
        'x-content-type-options': 'nosniff',
        'content-security-policy': SANDBOX,
        'content-disposition': contentDisposition(served.inline ? 'inline' : 'attachment', served.file.filename)
      })
      if (notModified) return await reply.code(304).send()
      void reply.type(served.file.mimeType).header('content-length', served.file.size)
      // HEAD: Fastify drops a stream's bytes but keeps its length, where an absent body would say 0.
      return await reply.send(body ?? Readable.from([]))
    })

    r.delete('/uploads/:fileId', { schema: { summary: 'Delete an upload', tags: ['uploads'], response: noContent, params: FileIdParams }, config: { operation: 'uploads.delete' } }, async (request, reply) => {
      await core.uploads.delete(actorOf(request), request.params)
      return await reply.code(204).send()
    })
  }
}
