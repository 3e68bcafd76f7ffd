// Uploads in an S3-compatible bucket (AWS S3, MinIO, R2, …): S3_BUCKET, under S3_KEY_PREFIX.
// A file is streamed by @aws-sdk/lib-storage: bodies up to one part go up as one PutObject, longer
// ones as a multipart upload whose parts are read from the stream as it arrives. S3 shows an
// object only once its upload completes, so a reader never sees a partial one; a failed multipart
// upload is aborted, which discards its parts (a bucket lifecycle rule that aborts incomplete
// multipart uploads after a day is still wise: a process killed mid-upload cannot abort).
import { DeleteObjectsCommand, GetObjectCommand, HeadBucketCommand, paginateListObjectsV2, S3Client, S3ServiceException } from '@aws-sdk/client-s3'
import { Upload } from '@aws-sdk/lib-storage'
import type { Readable } from 'node:stream'
import { checkKey, isUploadKey, type Storage, type StorageConfig } from './storage.js'

/**
 * The part size bounds the memory one upload holds: lib-storage gathers a part before sending it,
 * with up to QUEUE_SIZE parts in flight. 6 MiB (S3's minimum is 5 MiB) is above the avatar limit
 * (5 MiB), so an avatar always goes up in one PutObject, and one over its limit is refused before
 * anything is sent.
 */
const PART_SIZE = 6 * 1024 * 1024
const QUEUE_SIZE = 2
/** DeleteObjects takes at most 1,000 keys per call. */
const DELETE_BATCH = 1_000

export function createS3Storage (config: Extract<StorageConfig, { kind: 's3' }>): Storage {
  const client = new S3Client({
    region: config.region,
    ...(config.endpoint === undefined ? {} : { endpoint: config.endpoint }),
    forcePathStyle: config.forcePathStyle,
    ...(config.credentials === undefined ? {} : { credentials: config.credentials }),
    maxAttempts: 3,
    // A store that does not answer fails the request (503) instead of holding it; a response body
    // read slowly (a slow client downloading) may pause for a while.
    requestHandler: { connectionTimeout: 3_000, socketTimeout: 60_000 }
  })
  const Bucket = config.bucket
  const keyOf = (key: string): string => `${config.keyPrefix}${checkKey(key)}`

  return {
    kind: 's3',

    async put (key, body, contentType) {
      // lib-storage may answer a failed body with the error of its clean-up instead: keep the first.
      let bodyError: Error | undefined
      const onError = (error: Error): void => { bodyError ??= error }
      body.once('error', onError)
      const upload = new Upload({ client, params: { Bucket, Key: keyOf(key), Body: body, ContentType: contentType }, partSize: PART_SIZE, queueSize: QUEUE_SIZE, leavePartsOnError: false })
      try {
        await upload.done()
      } catch (error) {
        // A store that failed leaves the rest of the body unread: let its sender know.
        if (!body.destroyed) body.destroy()
        throw bodyError ?? error
      } finally {
        body.off('error', onError)
      }
    },

    async get (key) {
      try {
        const object = await client.send(new GetObjectCommand({ Bucket, Key: keyOf(key) }))
        return object.Body as Readable | undefined
      } catch (error) {
        if (error instanceof S3ServiceException && (error.name === 'NoSuchKey' || error.$metadata.httpStatusCode === 404)) return undefined
        throw error
      }
    },

    async remove (keys) {
      const failed: string[] = []
      for (let i = 0; i < keys.length; i += DELETE_BATCH) {
        const batch = keys.slice(i, i + DELETE_BATCH)
        try {
          const result = await client.send(new DeleteObjectsCommand({ Bucket, Delete: { Objects: batch.map((key) => ({ Key: keyOf(key) })), Quiet: true } }))
          const refused = new Set((result.Errors ?? []).map((e) => e.Key))
          failed.push(...batch.filter((key) => refused.has(keyOf(key))))
        } catch {
          failed.push(...batch)
        }
      }
      return { failed }
    },

    async * list (before) {
      // One page (at most 1,000 keys) per batch, under the prefix only: the bucket may be shared.
      for await (const page of paginateListObjectsV2({ client }, { Bucket, Prefix: config.keyPrefix })) {
        const keys = (page.Contents ?? []).flatMap(({ Key, LastModified }) => {
          if (Key === undefined || LastModified === undefined || LastModified >= before) return []
          const key = Key.slice(config.keyPrefix.length)
          return isUploadKey(key) ? [key] : []
        })
        if (keys.length > 0) yield keys
      }
    },

    async probe () {
      await client.send(new HeadBucketCommand({ Bucket }))
    },

    async close () {
      client.destroy()
    }
  }
}
