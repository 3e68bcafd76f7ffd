// What an upload passes through on its way to storage: it counts the bytes (one past the kind's
// limit ends the upload with 413, whatever Content-Length said), holds the first few KiB until
// file-type has named the format from them, and refuses an empty file or, for an avatar, anything
// that is not an image of an accepted format. Nothing is buffered beyond that head.
import { Transform, type TransformCallback } from 'node:stream'
import { fileTypeFromBuffer } from 'file-type'
import { AppError, PayloadTooLargeError, validationError } from '../errors.js'
import { UNKNOWN_TYPE } from './uploads.types.js'

/** What file-type reads of a stream to decide (its own `sampleSize` default). */
export const SNIFF_BYTES = 4_100

export interface GateRules {
  /** Bytes; one more is refused. */
  readonly limit: number
  /** Types accepted (by the bytes); undefined: any. */
  readonly accept?: ReadonlySet<string> | undefined
  /** How the accepted types read in a refusal ("a PNG, JPEG, WebP or GIF image"). */
  readonly acceptedText?: string
  /** What is left of the uploader's quota when it is below `limit`: one byte more ends the upload
   *  with this refusal at once, rather than after storing bytes that could never be kept. */
  readonly budget?: { readonly bytes: number, readonly refusal: () => AppError } | undefined
}

/** The type the bytes show, or undefined when they match no format file-type knows (plain text). */
export async function sniffType (head: Uint8Array): Promise<string | undefined> {
  try {
    return (await fileTypeFromBuffer(head))?.mime
  } catch {
    return undefined // a malformed header of some format is no format
  }
}

export function mebibytes (bytes: number): string {
  return `${Math.round(bytes / 1024 / 1024 * 100) / 100} MiB`
}

export class UploadGate extends Transform {
  /** Bytes that passed so far (the file's size once the upload ends). */
  bytes = 0
  /** The sniffed type, once decided. */
  mimeType: string | undefined
  /** Why this gate refused the upload (its own refusals only, not its source's or its reader's errors). */
  refusal: AppError | undefined
  /** Resolves with the type once the head has been read; rejects if the gate fails first. */
  readonly typed: Promise<string>
  private head: Buffer[] = []
  private headLength = 0
  private settleTyped!: { resolve: (type: string) => void, reject: (error: Error) => void }

  constructor (private readonly rules: GateRules) {
    super()
    this.typed = new Promise((resolve, reject) => { this.settleTyped = { resolve, reject } })
    this.typed.catch(() => {}) // awaited by whoever cares; an unobserved rejection is not a crash
  }

  override _transform (chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length
    if (this.bytes > this.rules.limit) {
      callback(this.refuse(new PayloadTooLargeError('file', `must be at most ${mebibytes(this.rules.limit)}`)))
      return
    }
    const { budget } = this.rules
    if (budget !== undefined && this.bytes > budget.bytes) {
      callback(this.refuse(budget.refusal()))
      return
    }
    if (this.mimeType !== undefined) {
      callback(null, chunk)
      return
    }
    this.head.push(chunk)
    this.headLength += chunk.length
    if (this.headLength < SNIFF_BYTES) {
      callback()
      return
    }
    this.decide().then(() => { callback() }, callback)
  }

  override _flush (callback: TransformCallback): void {
    if (this.mimeType !== undefined) {
      callback()
      return
    }
    if (this.bytes === 0) {
      callback(this.refuse(validationError('file', 'must not be empty')))
      return
    }
    this.decide().then(() => { callback() }, callback)
  }

  override _destroy (error: Error | null, callback: (error?: Error | null) => void): void {
    if (this.mimeType === undefined) this.settleTyped.reject(error ?? new Error('the upload ended before its type was known'))
    callback(error)
  }

  private async decide (): Promise<void> {
    const head = Buffer.concat(this.head)
    this.head = []
    const detected = await sniffType(head)
    const type = detected ?? UNKNOWN_TYPE
    const { accept, acceptedText } = this.rules
    if (accept !== undefined && !accept.has(type)) {
      throw this.refuse(validationError('file', `must be ${acceptedText ?? [...accept].join(', ')} by its content; this file's content is ${detected === undefined ? 'of no recognised format' : detected}`))
    }
    this.mimeType = type
    this.settleTyped.resolve(type)
    this.push(head)
  }

  private refuse (error: AppError): AppError {
    this.refusal ??= error
    return error
  }
}
