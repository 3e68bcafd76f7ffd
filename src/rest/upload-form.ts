// Multipart upload forms (DECISIONS §9), for any REST route that takes a file: `acceptMultipart`
// makes a route scope read multipart/form-data bodies only, and `receiveUpload` reads one form —
// a `file` part, preceded by a `type` field where the route does not fix the kind — streaming the
// file to storage through the core (core.uploads.receive) as it arrives. Nothing of the body is
// read before the admission gate has admitted the request (src/http/admission.ts, onRequest), so
// an anonymous or rate-limited upload is refused before its first byte is read.
//
// A route describes its form with `uploadForm` or `fileForm` as its `body` schema: the OpenAPI
// document shows it as a multipart/form-data request body with its fields in order, while the
// scope's validator leaves the body to the handler, which checks each part as it arrives.
import multipart, { type Multipart } from '@fastify/multipart'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Type, type TSchema } from 'typebox'
import { AppError, PayloadTooLargeError, validationError } from '../core/errors.js'
import type { Core } from '../core/index.js'
import type { ReceivedUpload } from '../core/uploads/uploads.js'
import { AVATAR_TYPES, MAX_UPLOAD_BYTES, UPLOAD_KINDS, UPLOAD_LIMITS, type UploadedFile, type UploadKind } from '../core/uploads/uploads.types.js'
import { invalidInput } from '../core/validation.js'
import { actorOf } from './identity.js'
import { typeBoxValidatorCompiler } from './validation.js'

const MiB = 1024 * 1024
const ORDER = 'The parts are read as they arrive, in order: a `type` field must come before the `file` it describes.'

/** A file part, with the media types the route takes (`encoding` in the document). */
function fileField (description: string, mediaTypes: readonly string[]): TSchema {
  return Type.String({ format: 'binary', description, 'x-media-types': mediaTypes.join(', ') })
}

/** The form `receiveUpload` reads: `type` (fixed where the route fixes the kind), then `file`. */
export function uploadForm (kind?: UploadKind): TSchema {
  const limit = kind === undefined ? MAX_UPLOAD_BYTES : UPLOAD_LIMITS[kind]
  const types = kind === 'avatar' ? [...AVATAR_TYPES] : ['application/octet-stream']
  const type = kind === undefined
    ? Type.Union(UPLOAD_KINDS.map((k) => Type.Literal(k)), { description: `The kind of upload (${UPLOAD_KINDS.map((k) => `${k}: at most ${UPLOAD_LIMITS[k] / MiB} MiB`).join(', ')}); before \`file\`.` })
    : Type.Optional(Type.Literal(kind, { description: 'May repeat the kind this route fixes; before `file`.' }))
  return Type.Object({ type, file: fileField(`The file, at most ${limit / MiB} MiB${kind === 'avatar' ? ': an image (PNG, JPEG, WebP or GIF by its bytes)' : ''}.`, types) }, {
    description: `A multipart/form-data form. ${ORDER}`
  })
}

/** The form `readFormFile` reads: one `file` part of at most `limit` bytes. */
export function fileForm (limit: number, description: string, mediaTypes: readonly string[]): TSchema {
  return Type.Object({ file: fileField(`${description}, at most ${limit / MiB} MiB.`, mediaTypes) }, { description: 'A multipart/form-data form of one part, `file`.' })
}

/** Room a form needs beyond its file (part headers, boundaries, the type field), for the early
 *  Content-Length check; the file itself is measured as it streams. */
const FORM_OVERHEAD_BYTES = 64 * 1024

/** An error that the REST error table answers by its status (src/rest/errors.ts). */
function httpError (statusCode: 400 | 413 | 415, message: string): Error & { statusCode: number } {
  return Object.assign(new Error(message), { statusCode })
}

function notMultipart (request: FastifyRequest): Error {
  const type = request.headers['content-type']
  const shown = type === undefined ? 'no Content-Type' : `Content-Type ${JSON.stringify(type.slice(0, 100))}`
  return httpError(415, `Send the file as multipart/form-data (the request has ${shown}).`)
}

/** Makes `scope` read multipart/form-data bodies, and refuse every other type with 415 before
 *  reading it. Register routes that call `receiveUpload` in such a scope. */
export async function acceptMultipart (scope: FastifyInstance): Promise<void> {
  scope.removeAllContentTypeParsers()
  scope.addContentTypeParser('*', (request, _payload, done) => { done(notMultipart(request)) })
  // The body schema describes the form (uploadForm, fileForm); its parts are checked as they stream.
  scope.setValidatorCompiler((route) => route.httpPart === 'body' ? (value: unknown) => ({ value }) : typeBoxValidatorCompiler(route))
  scope.addHook('onRoute', (route) => {
    if (route.schema?.body !== undefined) route.schema = { ...route.schema, consumes: ['multipart/form-data'] }
  })
  await scope.register(multipart, {
    // A form is one file and a field or two; busboy's own file limit is set per request.
    limits: { fieldNameSize: 100, fieldSize: 1_024, fields: 8, headerPairs: 20, parts: 16 }
  })
}

/** The parts of the request's form; an error of the multipart parser (a malformed or cut-off body)
 *  becomes a 400 that says so, a form over busboy's limits 413. */
async function * formParts (request: FastifyRequest, fileLimit: number): AsyncGenerator<Multipart> {
  const parts = request.parts({ limits: { fileSize: fileLimit } })
  while (true) {
    let next: IteratorResult<Multipart>
    try {
      next = await parts.next()
    } catch (error) {
      if (error instanceof AppError) throw error
      const status = (error as { statusCode?: unknown }).statusCode
      const message = (error as Error).message
      throw status === 413 ? new PayloadTooLargeError('(form)', `is too large: ${message}`) : httpError(400, `The multipart body could not be read: ${message}.`)
    }
    if (next.done === true) return
    yield next.value
  }
}

/**
 * After a refusal in the middle of a form, the rest of the body is still on its way: the form parser
 * lets go of it, and once the answer is out the edge reads and drops it within its bounds
 * (src/http/lingering-close.ts), so the client, still sending, gets the answer rather than a reset.
 * An HTTP/1.1 connection is closed after that.
 */
function dropRestOfBody (request: FastifyRequest, reply: FastifyReply): void {
  const raw = request.raw
  if (raw.readableEnded) return
  raw.unpipe()
  if (raw.httpVersionMajor === 1) void reply.header('connection', 'close')
}

/**
 * Reads the request's upload form and stores its file as the caller's upload; the kind is `kind`
 * where the route fixes it (attachments, avatars), else the form's `type` field, which must come
 * before the file. The file is streamed to storage as it arrives; any refusal — the wrong type, a
 * second file, an unknown field, a file over its limit, a body cut off — leaves nothing stored.
 */
export async function receiveUpload (core: Core, request: FastifyRequest, reply: FastifyReply, kind?: UploadKind): Promise<UploadedFile> {
  const actor = actorOf(request)
  if (!request.isMultipart()) throw notMultipart(request)
  const limit = kind === undefined ? MAX_UPLOAD_BYTES : UPLOAD_LIMITS[kind]
  // A body that says up front that it is too large is refused before any of it is read.
  const declared = Number(request.headers['content-length'])
  if (declared > limit + FORM_OVERHEAD_BYTES) {
    dropRestOfBody(request, reply)
    throw new PayloadTooLargeError('file', `must be at most ${limit / 1024 / 1024} MiB (the request is ${declared} bytes)`)
  }

  let chosen: UploadKind | undefined = kind
  let received: ReceivedUpload | undefined
  try {
    // One byte past the largest limit reaches the core, which refuses it (the kind's own limit may be lower).
    for await (const part of formParts(request, limit + 1)) {
      if (part.type === 'field') {
        if (part.fieldname !== 'type') throw validationError(part.fieldname, `is not allowed: the form takes ${kind === undefined ? '"type" and "file"' : '"file"'} only`)
        // A route that fixes the kind takes a `type` that repeats it (a form shared with /api/uploads).
        if (kind !== undefined) {
          if (part.value !== kind) throw validationError('type', `must be ${kind} here, or left out`)
          continue
        }
        if (chosen !== undefined) throw validationError('type', 'must be given once')
        if (!UPLOAD_KINDS.includes(part.value as UploadKind)) throw validationError('type', `must be one of: ${UPLOAD_KINDS.join(', ')}`)
        chosen = part.value as UploadKind
      } else {
        if (part.fieldname !== 'file') throw validationError(part.fieldname, 'is not allowed: the file goes in the field "file"')
        if (received !== undefined) throw validationError('file', 'must be one file: the form has more than one')
        if (chosen === undefined) throw validationError('type', 'is required, before the file in the form (avatar or attachment)')
        received = await core.uploads.receive(actor, { kind: chosen, file: { filename: part.filename, stream: part.file } })
      }
    }
  } catch (error) {
    await received?.discard()
    dropRestOfBody(request, reply)
    throw error
  }
  if (received === undefined) {
    throw invalidInput([
      ...(chosen === undefined ? [{ field: 'type', description: 'is required (avatar or attachment)' }] : []),
      { field: 'file', description: 'is required' }
    ])
  }
  return await received.commit()
}

/**
 * Reads a form of one `file` part into memory, at most `limit` bytes (one more is 413 naming
 * `file`, as is a Content-Length that says so up front): for files the core reads whole rather than
 * stores (a CV). Any refusal drops the rest of the body as receiveUpload does.
 */
export async function readFormFile (request: FastifyRequest, reply: FastifyReply, limit: number): Promise<{ filename: string, bytes: Buffer }> {
  if (!request.isMultipart()) throw notMultipart(request)
  const tooLarge = (size: string): PayloadTooLargeError => new PayloadTooLargeError('file', `must be at most ${limit / 1024 / 1024} MiB (${size})`)
  const declared = Number(request.headers['content-length'])
  if (declared > limit + FORM_OVERHEAD_BYTES) {
    dropRestOfBody(request, reply)
    throw tooLarge(`the request is ${declared} bytes`)
  }
  let file: { filename: string, bytes: Buffer } | undefined
  try {
    for await (const part of formParts(request, limit + 1)) {
      if (part.type === 'field') throw validationError(part.fieldname, 'is not allowed: the form takes "file" only')
      if (part.fieldname !== 'file') throw validationError(part.fieldname, 'is not allowed: the file goes in the field "file"')
      if (file !== undefined) throw validationError('file', 'must be one file: the form has more than one')
      const chunks: Buffer[] = []
      let size = 0
      try {
        for await (const chunk of part.file as AsyncIterable<Buffer>) {
          size += chunk.length
          if (size > limit) throw tooLarge('the file is larger')
          chunks.push(chunk)
        }
      } catch (error) {
        if (error instanceof AppError) throw error
        throw validationError('file', `was cut off: ${(error as Error).message}`)
      }
      file = { filename: part.filename, bytes: Buffer.concat(chunks, size) }
    }
  } catch (error) {
    dropRestOfBody(request, reply)
    throw error
  }
  if (file === undefined) throw validationError('file', 'is required')
  return file
}
