// Upload operations (DECISIONS §9): store a file streamed from a client, serve it, delete it.
//
// A file's bytes go to storage first, under a fresh id, as they arrive; its row is written only once
// they are all stored. So a refused or broken upload (over its limit, empty, not an image for an
// avatar, the client gone, storage failing) leaves no row, and its bytes are removed by storage
// itself (storage.ts: nothing partial is ever left behind). Storage failures are 503 `unavailable`.
//
// What one user keeps is bounded (UPLOAD_QUOTA_BYTES, DECISIONS §16): the row is written in the
// transaction that adds its size to the user's total, only if that stays within the quota (see
// addUploadBytes), so racing uploads cannot pass it together; a refused one leaves nothing. Storage
// is never called inside a transaction: bytes go before the row is written and after it is removed,
// and bytes whose row never came or whose removal failed are swept later (upload-sweep.ts).
import { createHash, type Hash } from 'node:crypto'
import type { Readable } from 'node:stream'
import type { Actor } from '../actor.js'
import type { CoreDeps } from '../deps.js'
import { AppError, notFound, PayloadTooLargeError, validationError } from '../errors.js'
import { fingerprintOf, ONE_TRANSACTION, pendingCall, runKeyed, type KeyedCall } from '../idempotency/keyed-call.js'
import { IN_FLIGHT_RETRY_AFTER_S } from '../idempotency/idempotency.types.js'
import { StorageFullError } from '../../infra/storage.js'
import { inTransaction } from '../transaction.js'
import { parseInput } from '../validation.js'
import { lockUserRow } from '../users/users.repository.js'
import { newId } from '../../infra/ids.js'
import { sanitiseFilename } from './filename.js'
import * as repo from './uploads.repository.js'
import { mebibytes, UploadGate } from './sniff.js'
import { AVATAR_TYPES, FileIdParams, servedInline, toUploadedFile, UPLOAD_KINDS, UPLOAD_LIMITS, uploadUrl, type UploadedFile, type UploadKind } from './uploads.types.js'
import { logThrottled } from '../../infra/throttled-log.js'

/** A file as a transport receives it. */
export interface IncomingFile {
  /** The client's name for it; cleaned before it is kept (filename.ts). */
  filename?: string | undefined
  /** Its bytes as they arrive. An error on it (the client went away, a malformed form) ends the upload. */
  stream: Readable
}

export interface StoreInput {
  kind: UploadKind
  file: IncomingFile
}

/** A file whose bytes are stored but that is not yet anyone's upload (see `receive`). */
export interface ReceivedUpload {
  /** Records it as the caller's upload and returns the resource; its bytes go if that fails. */
  commit (): Promise<UploadedFile>
  /** Removes its bytes: the upload never happened. */
  discard (): Promise<void>
}

export interface ServedUpload {
  file: UploadedFile
  /** Strong: the bytes under an id never change. */
  etag: string
  /** Shown in the browser (a raster image) rather than downloaded. */
  inline: boolean
  /** Avatars are readable by anyone, so shared caches may keep them; attachments only per user. */
  readableByAnyone: boolean
  /** Opens its bytes: not_found when they are gone, unavailable when storage fails. */
  open (): Promise<Readable>
}

function accountGone (): AppError {
  return new AppError('unauthenticated', 'This account no longer exists.')
}

function storageUnavailable (error?: unknown): AppError {
  return new AppError('unavailable', error instanceof StorageFullError ? 'File storage is full; try again later.' : 'File storage is unavailable; try again later.')
}

/** 413 `QuotaExceeded`, naming the file, with what is used and what is allowed. */
function quotaExceeded (quota: number, used: number): AppError {
  const description = `would pass your storage quota of ${mebibytes(quota)} (${mebibytes(used)} used); delete some of your files first`
  return new AppError('quota_exceeded', `file: ${description}`, [{ field: 'file', description }])
}

export interface UploadsOptions {
  /** Called after a change to a user's profile commits (an avatar cleared), so caches refresh. */
  userChanged (userId: string): Promise<void>
}

/** Removes stored bytes without failing the caller: what cannot be removed is logged for an operator. */
export async function removeStoredFiles (deps: Pick<CoreDeps, 'storage' | 'log'>, keys: readonly string[]): Promise<void> {
  if (keys.length === 0) return
  const { failed } = await deps.storage.remove(keys).catch((error: unknown) => {
    logThrottled(deps.log, 'error', 'storage: removing files failed', { err: error })
    return { failed: [...keys] }
  })
  if (failed.length > 0) deps.log.error({ keys: failed }, 'storage: files left behind (no row refers to them); the upload sweep removes them later')
}

export function createUploads (deps: CoreDeps, options: UploadsOptions) {
  const { db, clock, storage, config, log } = deps
  const quota = config.uploadQuotaBytes
  let receiving = 0

  /**
   * Streams the file to storage, checking it on the way (uploads/sniff.ts), and returns it stored
   * but not yet recorded, for a transport that has more of its request to read before it may answer
   * (a multipart form's later parts); `store` is this plus `commit`.
   */
  async function receivePlain (actor: Actor, input: StoreInput, digest?: Hash): Promise<ReceivedUpload> {
    if (!UPLOAD_KINDS.includes(input.kind)) throw validationError('kind', `must be one of: ${UPLOAD_KINDS.join(', ')}`)
    const { kind } = input
    const filename = sanitiseFilename(input.file.filename)
    const id = newId('file')
    // Checked again when the row is written (commit); this only spares storing what cannot be kept.
    const used = await repo.uploadBytesOf(db, actor.userId)
    if (used >= quota) throw quotaExceeded(quota, used)
    const budget = quota - used < UPLOAD_LIMITS[kind] ? { bytes: quota - used, refusal: () => quotaExceeded(quota, used) } : undefined
    const gate = new UploadGate(kind === 'avatar'
      ? { limit: UPLOAD_LIMITS.avatar, accept: AVATAR_TYPES, acceptedText: 'a PNG, JPEG, WebP or GIF image', budget }
      : { limit: UPLOAD_LIMITS[kind], budget })
    // Whoever reads the gate sees its errors; until storage does, they must not go unheard.
    gate.on('error', () => {})
    const source = input.file.stream
    let sourceError: Error | undefined
    let abandoned = false
    const onSourceError = (error: Error): void => {
      if (abandoned) return
      sourceError ??= error
      gate.destroy(error)
    }
    const onSourceClose = (): void => {
      if (abandoned || source.readableEnded) return
      sourceError ??= new Error('the request ended before the file was complete')
      gate.destroy(sourceError)
    }
    source.on('error', onSourceError)
    source.on('close', onSourceClose)
    source.pipe(gate)
    // The bytes are hashed as they stream, for the request's fingerprint (a keyed upload).
    if (digest !== undefined) source.on('data', (chunk: Buffer) => { digest.update(chunk) })
    receiving++
    try {
      const mimeType = await gate.typed
      await storage.put(id, gate, mimeType)
      if (gate.mimeType === undefined) throw new Error('upload gate ended untyped')
      const size = gate.bytes
      let settled = false
      return {
        commit: async () => {
          if (settled) throw new Error('upload already committed or discarded')
          settled = true
          try {
            return await inTransaction(deps, async ({ trx }) => {
              const added = await repo.addUploadBytes(trx, actor.userId, size, quota)
              if (added === 'over_quota') throw quotaExceeded(quota, await repo.uploadBytesOf(trx, actor.userId))
              if (added === 'missing') throw accountGone()
              return toUploadedFile(await repo.insertUpload(trx, { id, ownerId: actor.userId, kind, filename, size, mimeType, storageKey: id, now: clock.now() }), config.appUrl)
            })
          } catch (error) {
            // After the rollback: nothing refers to the bytes.
            await removeStoredFiles(deps, [id])
            // The account was deleted while its file was arriving.
            if ((error as { code?: unknown }).code === '23503') throw accountGone()
            throw error
          }
        },
        discard: async () => {
          if (settled) return
          settled = true
          await removeStoredFiles(deps, [id])
        }
      }
    } catch (error) {
      // Stop reading the client's file: the rest of it would go nowhere.
      abandoned = true
      source.unpipe(gate)
      if (!source.destroyed) source.destroy()
      gate.destroy()
      if (gate.refusal !== undefined) throw gate.refusal
      if (sourceError !== undefined) throw validationError('file', `did not arrive whole: ${sourceError.message}`)
      logThrottled(log, 'error', 'storage: storing an upload failed', { err: error, kind })
      throw storageUnavailable(error)
    } finally {
      receiving--
      source.off('error', onSourceError)
      source.off('close', onSourceClose)
    }
  }

  /**
   * An upload with an Idempotency-Key (src/core/idempotency/keyed-call.ts): its fingerprint is its
   * kind, its name and its bytes, hashed as they stream. The first with its key stores the file and
   * keeps the upload in the commit's transaction; a retry only hashes its bytes (nothing stored) and,
   * once they are all in, gets the first upload again — or 422 for another file, or 409 while the
   * first is still arriving.
   */
  async function receiveKeyed (call: KeyedCall, actor: Actor, input: StoreInput): Promise<ReceivedUpload> {
    if (!UPLOAD_KINDS.includes(input.kind)) throw validationError('kind', `must be one of: ${UPLOAD_KINDS.join(', ')}`)
    const digest = createHash('sha256')
    const fingerprint = (): string => fingerprintOf(call.scope, { kind: input.kind, filename: input.file.filename ?? null }, digest.digest('base64url'))
    if (call.state === 'held') {
      await hashWhole(input, digest)
      return {
        // Its bytes are not kept: were the first run gone meanwhile, this one cannot run in its place.
        commit: async () => await runKeyed(deps, call, fingerprint(), {}, async () => { throw new AppError('aborted', 'The first upload with this Idempotency-Key failed; send the file again.', [], IN_FLIGHT_RETRY_AFTER_S) }),
        discard: async () => {}
      }
    }
    const received = await receivePlain(actor, input, digest)
    return {
      commit: async () => await runKeyed(deps, call, fingerprint(), ONE_TRANSACTION, received.commit).finally(received.discard),
      discard: received.discard
    }
  }

  /** A retry's file, read to its end and hashed, within its kind's limit. */
  async function hashWhole (input: StoreInput, digest: Hash): Promise<void> {
    const limit = UPLOAD_LIMITS[input.kind]
    let size = 0
    try {
      for await (const chunk of input.file.stream as AsyncIterable<Buffer>) {
        size += chunk.length
        if (size > limit) throw new PayloadTooLargeError('file', `must be at most ${mebibytes(limit)}`)
        digest.update(chunk)
      }
    } catch (error) {
      if (error instanceof AppError) throw error
      throw validationError('file', `did not arrive whole: ${(error as Error).message}`)
    }
  }

  async function receive (actor: Actor, input: StoreInput): Promise<ReceivedUpload> {
    const call = pendingCall()
    return call === undefined ? await receivePlain(actor, input) : await receiveKeyed(call, actor, input)
  }

  return {
    receive,

    /** Stores a file as the caller's upload of `kind` and returns it (the avatar route uses this). */
    async store (actor: Actor, input: StoreInput): Promise<UploadedFile> {
      return await (await receive(actor, input)).commit()
    },

    /** Avatars to anyone, attachments to signed-in users (DECISIONS §5); anonymous: 401. */
    async open (actor: Actor | null, input: unknown): Promise<ServedUpload> {
      const { fileId } = parseInput(FileIdParams, input)
      const row = await repo.findUpload(db, fileId)
      if (row === undefined) throw notFound('File')
      if (row.kind !== 'avatar' && actor === null) throw new AppError('unauthenticated', 'Sign in to continue.')
      return {
        file: toUploadedFile(row, config.appUrl),
        etag: `"${row.id}"`,
        inline: servedInline(row.mime_type),
        readableByAnyone: row.kind === 'avatar',
        open: async () => {
          let stream: Readable | undefined
          try {
            stream = await storage.get(row.storage_key)
          } catch (error) {
            logThrottled(log, 'error', 'storage: reading an upload failed', { err: error, fileId })
            throw storageUnavailable()
          }
          // Deleted since its row was read.
          if (stream === undefined) throw notFound('File')
          return stream
        }
      }
    },

    /**
     * Owner only; to anyone else the file does not exist. The row goes (with its size off the
     * owner's total, and the owner's avatar cleared if it showed this file), then, after the commit,
     * the bytes; bytes storage fails to remove are logged and swept later (upload-sweep.ts).
     */
    async delete (actor: Actor, input: unknown): Promise<void> {
      const { fileId } = parseInput(FileIdParams, input)
      const { key, avatarCleared } = await inTransaction(deps, async ({ trx }) => {
        // The owner's row first, as every write to a user's uploads takes it (upload, avatar change,
        // account deletion): one lock order, no deadlock between them.
        await lockUserRow(trx, actor.userId)
        const row = await repo.deleteOwnUpload(trx, fileId, actor.userId)
        if (row === undefined) throw notFound('File')
        await repo.subtractUploadBytes(trx, actor.userId, row.size)
        const avatarCleared = row.kind === 'avatar' && await repo.clearAvatarShowing(trx, actor.userId, uploadUrl(config.appUrl, fileId), clock.now())
        return { key: row.storage_key, avatarCleared }
      })
      await removeStoredFiles(deps, [key])
      if (avatarCleared) await options.userChanged(actor.userId)
    },

    /** Uploads being received by this instance now (tests wait for a broken one to settle). */
    receiving: (): number => receiving
  }
}

export type Uploads = ReturnType<typeof createUploads>
