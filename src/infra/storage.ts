// Where uploaded files' bytes live (DECISIONS §9): local disk under DATA_DIR/uploads (the embedded
// default, storage-local.ts) or an S3-compatible bucket when S3_BUCKET is set (storage-s3.ts). The
// database keeps what a file is (owner, name, type, size); this keeps only its bytes, under a key.
import type { Readable } from 'node:stream'
import type { Logger } from './logger.js'
import { createLocalStorage } from './storage-local.js'

export type StorageConfig =
  | {
    readonly kind: 'local'
    readonly dir: string
    /** Bytes the file system keeps free: an upload is refused (storage unavailable) below it. */
    readonly reserveBytes: number
  }
  | {
    readonly kind: 's3'
    readonly bucket: string
    readonly region: string
    /** Unset: AWS itself. */
    readonly endpoint: string | undefined
    readonly forcePathStyle: boolean
    /** Unset: the SDK's default chain (an instance or task role). */
    readonly credentials: { readonly accessKeyId: string, readonly secretAccessKey: string, readonly sessionToken?: string } | undefined
    /** Prepended to every key, so the bucket can be shared. */
    readonly keyPrefix: string
  }

export interface Storage {
  readonly kind: StorageConfig['kind']
  /**
   * Streams `body` into the object `key`, reading it as it arrives (never holding it whole).
   * Resolves once the whole object is stored. An object appears whole or not at all: on any failure,
   * `body` erroring included, nothing of it is left behind and the promise rejects with the first
   * error (a failure of `body` itself, when that came first).
   */
  put (key: string, body: Readable, contentType: string): Promise<void>
  /** The object's bytes, or undefined when there is no such object; rejects when storage fails. */
  get (key: string): Promise<Readable | undefined>
  /** Removes objects; a missing one is not an error. Resolves with the keys it could not remove. */
  remove (keys: readonly string[]): Promise<{ failed: string[] }>
  /**
   * The keys of objects last written before `before`, a batch at a time (the sweep of bytes no
   * upload row refers to: src/core/uploads/upload-sweep.ts). Only keys this service could have
   * written (upload ids); anything else sharing the directory or bucket is left alone.
   */
  list (before: Date): AsyncIterable<string[]>
  /** Resolves when storage answers (the health report's `storage` part). */
  probe (): Promise<void>
  close (): Promise<void>
}

/** Local disk has less free space than it keeps for the embedded database (UPLOAD_DISK_RESERVE_BYTES). */
export class StorageFullError extends Error {
  constructor (free: number, reserve: number) {
    super(`the uploads' file system has ${free} bytes free, below the ${reserve} it keeps`)
    this.name = 'StorageFullError'
  }
}

/** Whether a key is one this service writes: an upload id (src/infra/ids.ts, `file_…`). */
export function isUploadKey (key: string): boolean {
  return /^file_[A-Za-z0-9_-]{1,195}$/.test(key)
}

/** Keys are ours (upload ids), never a client's text; checked anyway, since a key becomes a path. */
export function checkKey (key: string): string {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(key)) throw new Error(`invalid storage key ${JSON.stringify(key.slice(0, 50))}`)
  return key
}

/** Never throws for an unreachable store: the health report and each request say so instead. */
export async function createStorage (config: StorageConfig, log: Logger): Promise<Storage> {
  if (config.kind === 'local') return await createLocalStorage(config, log)
  // The AWS SDK is loaded only when a bucket is configured: it is a large part of the start-up time.
  const { createS3Storage } = await import('./storage-s3.js')
  return createS3Storage(config)
}
