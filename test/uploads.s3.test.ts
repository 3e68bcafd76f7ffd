// Uploads in an S3-compatible bucket: the same service with S3_BUCKET set, against a real S3 server
// started here (s3rver: an S3 API server in Node, storing on local disk and checking SigV4
// signatures), reached over HTTP by the AWS SDK exactly as AWS or MinIO would be. The bucket is
// listed after every refused upload: nothing may appear in it.
import t from 'tap'
import { existsSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import S3rver from 's3rver'
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3'
import { sweepUnreferencedBytes } from '../src/core/uploads/upload-sweep.js'
import { startApp } from './helpers/app.js'
import { signInPerson } from './helpers/people.js'
import { deleteAccount, eventually, formOf, multipartBytes, pngOfSize, rawUpload, SAMPLES, uploadClient } from './helpers/uploads.js'
import { temporaryDir } from './helpers/temp-dirs.js'

const MiB = 1024 * 1024
const BUCKET = 'canvas-uploads'
const directory = temporaryDir('canvas-s3-')

/** The requests the S3 server received, as `METHOD /path?query`. */
const received: string[] = []

/** s3rver's request handler on a server of our own, to see the requests and cut connections on close. */
async function startS3 (port = 0): Promise<{ close: () => Promise<void>, port: number }> {
  const s3rver = new S3rver({ silent: true, directory, configureBuckets: [{ name: BUCKET, configs: [] }] })
  await s3rver.configureBuckets()
  const handle = s3rver.callback()
  const server = http.createServer((request, response) => {
    received.push(`${request.method ?? ''} ${request.url ?? ''}`)
    handle(request, response)
  })
  await new Promise<void>((resolve) => { server.listen(port, '127.0.0.1', resolve) })
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => { resolve() })
        server.closeAllConnections()
      })
    }
  }
}

let s3 = await startS3()
t.teardown(async () => { await s3.close() })
const endpoint = `http://127.0.0.1:${s3.port}`
// s3rver's fixed credentials; it checks every request's signature with them.
const credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' }
const s = await startApp({ S3_BUCKET: BUCKET, S3_ENDPOINT: endpoint, S3_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey })
t.teardown(s.close)
const client = uploadClient(s)
const bucket = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials })
t.teardown(() => { bucket.destroy() })

/** Every object in the bucket. */
async function objects (): Promise<string[]> {
  const listed = await bucket.send(new ListObjectsV2Command({ Bucket: BUCKET }))
  return (listed.Contents ?? []).map((o) => o.Key ?? '').sort()
}

async function objectBytes (key: string): Promise<Buffer> {
  const object = await bucket.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }))
  return Buffer.from(await object.Body!.transformToByteArray())
}

t.test('configuration: S3 is chosen, nothing goes to DATA_DIR/uploads', async (t) => {
  t.equal(s.config.storage.kind, 's3')
  t.match(s.config.storage, { bucket: BUCKET, endpoint, forcePathStyle: true, keyPrefix: 'uploads/' })
  const health = await s.app.inject({ method: 'GET', url: '/health' })
  t.equal(health.json().services.storage.status, 'healthy')
  t.notOk(existsSync(join(s.config.dataDir, 'uploads')))
})

t.test('an avatar (one PutObject) and a 20 MiB attachment (a multipart upload) are stored in the bucket and served back', async (t) => {
  const user = await signInPerson(s, 's3')
  const avatar = await client.post(user.cookie, formOf(['type', 'avatar'], { filename: 'me.png', content: SAMPLES.png, type: 'text/plain' }))
  t.equal(avatar.status, 201)
  const file = avatar.json().data!
  t.match(file, { mimeType: 'image/png', size: SAMPLES.png.length, url: `http://app.test/api/uploads/${String(file.id)}` })
  t.same(await objectBytes(`uploads/${String(file.id)}`), SAMPLES.png, 'the object holds the bytes')
  const served = await client.get(undefined, String(file.url))
  t.equal(served.status, 200)
  t.same(served.body, SAMPLES.png)
  t.equal(served.headers.get('content-type'), 'image/png')
  t.equal(served.headers.get('x-content-type-options'), 'nosniff')
  t.equal(served.headers.get('etag'), `"${String(file.id)}"`)

  const content = Buffer.alloc(20 * MiB)
  for (let i = 0; i < content.length; i += 4096) content.writeUInt32BE(i, i) // not all alike: order matters
  const big = await client.post(user.cookie, formOf({ filename: 'big.bin', content }), '/api/attachments')
  t.equal(big.status, 201)
  const bigFile = big.json().data!
  t.equal(bigFile.size, 20 * MiB)
  const back = await client.get(user.cookie, String(bigFile.url))
  t.equal(back.status, 200)
  t.equal(back.headers.get('content-length'), String(20 * MiB))
  t.ok(back.body.equals(content), 'served back byte for byte')
  t.same(await objects(), [`uploads/${String(bigFile.id)}`, `uploads/${String(file.id)}`].sort())
})

t.test('refused and broken uploads leave nothing in the bucket', async (t) => {
  const user = await signInPerson(s, 's3-bad')
  const before = await objects()
  const tooLargeAvatar = await client.post(user.cookie, formOf(['type', 'avatar'], { filename: 'big.png', content: pngOfSize(5 * MiB + 1) }))
  t.equal(tooLargeAvatar.status, 413)
  // Past the first parts of a multipart upload: the upload is aborted.
  const tooLarge = await client.post(user.cookie, formOf({ filename: 'big.bin', content: Buffer.alloc(25 * MiB + 1) }), '/api/attachments')
  t.equal(tooLarge.status, 413)
  t.equal(tooLarge.json().error, 'PayloadTooLarge')
  const text = await client.post(user.cookie, formOf(['type', 'avatar'], { filename: 'x.png', content: SAMPLES.text }))
  t.equal(text.status, 400)
  const empty = await client.post(user.cookie, formOf(['type', 'attachment'], { filename: 'e.txt', content: Buffer.alloc(0) }))
  t.equal(empty.status, 400)
  const two = await client.post(user.cookie, formOf(['type', 'attachment'], { filename: 'a.txt', content: SAMPLES.text }, { filename: 'b.txt', content: SAMPLES.text }))
  t.equal(two.status, 400, 'the first file of two is removed again')

  const { body, contentType } = multipartBytes(['type', 'attachment'], { filename: 'cut.bin', content: Buffer.alloc(14 * MiB, 9) })
  const truncated = await rawUpload(s, { cookie: user.cookie, contentType, body, send: 13 * MiB, then: 'end' })
  t.equal(truncated.status, 400, `truncated: ${truncated.body}`)
  const dropped = await rawUpload(s, { cookie: user.cookie, contentType, body, send: 8 * MiB, then: 'drop' })
  t.ok(dropped.closed)
  t.ok(await eventually(() => s.app.core.uploads.receiving() === 0), 'the dropped upload\'s handler finished')
  t.same(await objects(), before, 'no object appeared')
  // The multipart uploads that had begun (the 25 MiB attachment, the cut-off and the dropped one)
  // were aborted, which on S3 discards their parts. (s3rver itself answers AbortMultipartUpload
  // with 405 and keeps the parts in a scratch folder; S3 and MinIO delete them.)
  const started = received.filter((r) => /^POST \/canvas-uploads\/uploads\/file_[\w-]+\?uploads/.test(r)).length
  const aborted = received.filter((r) => /^DELETE \/canvas-uploads\/uploads\/file_[\w-]+\?uploadId=/.test(r)).length
  t.ok(started >= 3, `${started} multipart uploads began`)
  t.equal(aborted, started - 1, 'every one but the 20 MiB attachment stored earlier was aborted')
})

t.test('delete and account deletion remove the objects', async (t) => {
  const user = await signInPerson(s, 's3-del')
  const a = (await client.post(user.cookie, formOf(['type', 'attachment'], { filename: 'a.txt', content: SAMPLES.text }))).json().data!
  const b = (await client.post(user.cookie, formOf(['type', 'avatar'], { filename: 'b.gif', content: SAMPLES.gif }))).json().data!
  const c = (await client.post(user.cookie, formOf(['type', 'attachment'], { filename: 'c.pdf', content: SAMPLES.pdf }))).json().data!
  t.ok((await objects()).includes(`uploads/${String(a.id)}`))
  t.equal((await client.delete(user.cookie, String(a.url))).status, 204)
  t.notOk((await objects()).includes(`uploads/${String(a.id)}`), 'deleted: the object is gone')
  t.equal(await deleteAccount(s, user.cookie, user.email), 204)
  const left = await objects()
  t.notOk(left.includes(`uploads/${String(b.id)}`) || left.includes(`uploads/${String(c.id)}`), 'account deleted: its objects are gone')
})

t.test('S3 down: uploads and reads answer 503, health says unhealthy, deletion completes; all well once it is back, its leftovers for the sweep', async (t) => {
  const user = await signInPerson(s, 's3-down')
  const kept = (await client.post(user.cookie, formOf(['type', 'avatar'], { filename: 'me.png', content: SAMPLES.png }))).json().data!
  const leaving = await signInPerson(s, 's3-leaving')
  const leavingFile = (await client.post(leaving.cookie, formOf(['type', 'attachment'], { filename: 'x.txt', content: SAMPLES.text }))).json().data!
  await s3.close()

  const upload = await client.post(user.cookie, formOf(['type', 'attachment'], { filename: 'x.txt', content: SAMPLES.text }))
  t.equal(upload.status, 503)
  t.equal(upload.json().error, 'ServiceUnavailable')
  const read = await client.get(undefined, String(kept.url))
  t.equal(read.status, 503)
  t.equal(read.json().error, 'ServiceUnavailable')
  const health = await s.app.inject({ method: 'GET', url: '/health' })
  t.equal(health.statusCode, 503)
  t.equal(health.json().services.storage.status, 'unhealthy')
  t.equal(await deleteAccount(s, leaving.cookie, leaving.email), 204, 'account deletion is not blocked by storage')

  s3 = await startS3(s3.port)
  t.equal((await s.app.inject({ method: 'GET', url: '/health' })).json().services.storage.status, 'healthy')
  const again = await client.get(undefined, String(kept.url))
  t.equal(again.status, 200)
  t.same(again.body, SAMPLES.png)
  t.equal((await client.get(user.cookie, String(leavingFile.url))).status, 404, 'the deleted account\'s file is not served')
  t.ok((await objects()).includes(`uploads/${String(leavingFile.id)}`), 'its object stayed behind: S3 was down after the commit')
})

t.test('storage is called after the commit: a delete while S3 is down answers 204, and the sweep removes what no row refers to', async (t) => {
  const user = await signInPerson(s, 's3-sweep')
  const kept = (await client.post(user.cookie, formOf(['type', 'attachment'], { filename: 'k.txt', content: SAMPLES.text }))).json().data!
  const gone = (await client.post(user.cookie, formOf(['type', 'attachment'], { filename: 'g.txt', content: SAMPLES.text }))).json().data!
  await s3.close()
  t.equal((await client.delete(user.cookie, String(gone.url))).status, 204, 'the row goes; the object cannot yet')
  s3 = await startS3(s3.port)
  t.equal((await client.get(user.cookie, String(gone.url))).status, 404)
  await bucket.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'uploads/file_orphanNeverCommitted1', Body: 'orphan' }))
  await bucket.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'elsewhere/file_notUnderThePrefix', Body: 'not ours' }))
  const before = await objects()
  t.ok(before.includes(`uploads/${String(gone.id)}`) && before.includes('uploads/file_orphanNeverCommitted1'))

  t.equal(await sweepUnreferencedBytes({ ...s.app.deps, clock: { now: () => new Date() } }, { force: true }), 0, 'within the grace period: nothing swept')
  const later = new Date(Date.now() + 2 * 3600_000)
  const removed = await sweepUnreferencedBytes({ ...s.app.deps, clock: { now: () => later } }, { force: true })
  const after = await objects()
  t.ok(removed !== undefined && removed >= 2, `${String(removed)} removed`)
  t.notOk(after.includes(`uploads/${String(gone.id)}`), 'the deleted upload\'s object is swept')
  t.notOk(after.includes('uploads/file_orphanNeverCommitted1'), 'an object whose row never committed is swept')
  t.ok(after.includes(`uploads/${String(kept.id)}`), 'an object with its row stays')
  t.ok(after.includes('elsewhere/file_notUnderThePrefix'), 'nothing outside S3_KEY_PREFIX is touched')
  t.equal((await client.get(user.cookie, String(kept.url))).status, 200)
})
