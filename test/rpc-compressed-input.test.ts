// Compressed request bodies on /rpc. A body that does not decompress, or decompresses to bytes that
// are not a message of its method, is the client's mistake: invalid_argument, never `internal`. One
// that decompresses past the 1 MiB read limit is resource_exhausted. Valid compressed calls go
// through unchanged. Every call is AuthService/Ping (public), sent as exact bytes.
import t, { type Test } from 'tap'
import { brotliCompressSync, gzipSync } from 'node:zlib'
import { create, fromBinary, toBinary } from '@bufbuild/protobuf'
import { PingRequestSchema, PingResponseSchema } from '../src/gen/app/auth/v1/auth_pb.js'
import { startApp } from './helpers/app.js'

const s = await startApp()
t.teardown(s.close)

const PING = '/rpc/app.auth.v1.AuthService/Ping'
const ENVELOPED_TYPES = ['application/grpc-web+proto', 'application/grpc-web', 'application/grpc', 'application/grpc+proto']
/** Bytes that are no PingRequest: field 1 with wire type 7 (illegal tag). */
const ILLEGAL_TAG = Buffer.from([0x0f, 0xff, 0x00, 0x12])
/** Bytes that are no PingRequest: a varint cut short (premature EOF). */
const CUT_SHORT = Buffer.from([0x08, 0xff])
/** The start of a gzip stream, cut off before its end. */
const TRUNCATED_GZIP = gzipSync(Buffer.from('a message long enough to be cut short')).subarray(0, 12)
const ping = (message: string): Buffer => Buffer.from(toBinary(PingRequestSchema, create(PingRequestSchema, { message })))

function envelope (message: Buffer, flags: number): Buffer {
  const head = Buffer.alloc(5)
  head.writeUInt8(flags, 0)
  head.writeUInt32BE(message.length, 1)
  return Buffer.concat([head, message])
}

interface ConnectReply { status: number, code: unknown, message: unknown, body: Buffer }

/** A Connect unary POST; replies are asked uncompressed, so a binary one parses as it is. */
async function connectCall (contentType: string, encoding: string, payload: Buffer): Promise<ConnectReply> {
  const res = await s.app.inject({ method: 'POST', url: PING, headers: { 'content-type': contentType, 'content-encoding': encoding, 'accept-encoding': 'identity' }, payload })
  const error = res.headers['content-type'] === 'application/json' && res.statusCode !== 200
    ? JSON.parse(res.body) as { code?: unknown, message?: unknown }
    : {}
  return { status: res.statusCode, code: error.code, message: error.message, body: res.rawPayload }
}

interface GrpcReply { status: number, grpcStatus: unknown, grpcMessage: unknown, frames: Array<{ flags: number, data: Buffer }> }

/** A gRPC or gRPC-Web POST over HTTP/1.1; gRPC sends its status in HTTP trailers, gRPC-Web in a trailer frame. */
async function grpcCall (contentType: string, encoding: string | undefined, payload: Buffer): Promise<GrpcReply> {
  const headers: Record<string, string> = { 'content-type': contentType, te: 'trailers', 'grpc-accept-encoding': 'identity' }
  if (encoding !== undefined) headers['grpc-encoding'] = encoding
  const res = await s.app.inject({ method: 'POST', url: PING, headers, payload })
  const frames: Array<{ flags: number, data: Buffer }> = []
  for (let offset = 0; offset + 5 <= res.rawPayload.length;) {
    const end = offset + 5 + res.rawPayload.readUInt32BE(offset + 1)
    frames.push({ flags: res.rawPayload.readUInt8(offset), data: res.rawPayload.subarray(offset + 5, end) })
    offset = end
  }
  const trailer = frames.find((frame) => (frame.flags & 0x80) !== 0)?.data.toString() ?? ''
  const status = (name: string): unknown => res.trailers[name] ?? new RegExp(`${name}: ?(\\S+)`).exec(trailer)?.[1]
  return { status: res.statusCode, grpcStatus: status('grpc-status'), grpcMessage: status('grpc-message'), frames }
}

function isInvalidArgument (t: Test, reply: ConnectReply, what: string): void {
  t.equal(reply.status, 400, `${what}: HTTP 400`)
  t.equal(reply.code, 'invalid_argument', `${what}: invalid_argument`)
  t.ok(typeof reply.message === 'string' && reply.message !== '', `${what}: a message (${String(reply.message)})`)
}

function isGrpcInvalidArgument (t: Test, reply: GrpcReply, what: string): void {
  t.equal(reply.status, 200, `${what}: HTTP 200`)
  t.equal(reply.grpcStatus, '3', `${what}: grpc-status 3`)
  t.ok(typeof reply.grpcMessage === 'string' && reply.grpcMessage !== '', `${what}: a grpc-message (${String(reply.grpcMessage)})`)
}

t.test('Connect unary: a gzip or br body that decompresses to no valid message is invalid_argument', async (t) => {
  for (const [encoding, compress] of [['gzip', gzipSync], ['br', brotliCompressSync]] as const) {
    isInvalidArgument(t, await connectCall('application/proto', encoding, compress(ILLEGAL_TAG)), `${encoding}, illegal tag`)
    isInvalidArgument(t, await connectCall('application/proto', encoding, compress(CUT_SHORT)), `${encoding}, premature EOF`)
  }
})

t.test('Connect unary: a br body that is not brotli, or a gzip body cut short, is invalid_argument', async (t) => {
  for (const contentType of ['application/json', 'application/proto']) {
    isInvalidArgument(t, await connectCall(contentType, 'br', Buffer.from('junk')), `${contentType}, br junk`)
    isInvalidArgument(t, await connectCall(contentType, 'gzip', TRUNCATED_GZIP), `${contentType}, truncated gzip`)
  }
})

t.test('gRPC and gRPC-Web: an envelope flagged compressed without a grpc-encoding is invalid_argument', async (t) => {
  const message = Buffer.from([0x0a, 0x01, 0x61])
  for (const type of [...ENVELOPED_TYPES, 'application/grpc-web+json']) {
    for (const flags of [0x01, 0xff]) {
      isGrpcInvalidArgument(t, await grpcCall(type, undefined, envelope(message, flags)), `${type}, flags ${flags}, no grpc-encoding`)
      isGrpcInvalidArgument(t, await grpcCall(type, 'identity', envelope(message, flags)), `${type}, flags ${flags}, grpc-encoding identity`)
    }
  }
})

t.test('gRPC and gRPC-Web: a compressed envelope that decompresses to no valid message, or does not decompress, is invalid_argument', async (t) => {
  for (const type of ENVELOPED_TYPES) {
    for (const flags of [0x01, 0xff]) {
      isGrpcInvalidArgument(t, await grpcCall(type, 'gzip', envelope(gzipSync(ILLEGAL_TAG), flags)), `${type}, flags ${flags}, gzip, illegal tag`)
      isGrpcInvalidArgument(t, await grpcCall(type, 'br', envelope(brotliCompressSync(CUT_SHORT), flags)), `${type}, flags ${flags}, br, premature EOF`)
    }
    isGrpcInvalidArgument(t, await grpcCall(type, 'br', envelope(Buffer.from('junk'), 0x01)), `${type}, br junk`)
    isGrpcInvalidArgument(t, await grpcCall(type, 'gzip', envelope(TRUNCATED_GZIP, 0x01)), `${type}, truncated gzip`)
  }
})

t.test('a body that decompresses past 1 MiB is resource_exhausted', async (t) => {
  const huge = ping('x'.repeat(1024 * 1024))
  for (const [encoding, compress] of [['gzip', gzipSync], ['br', brotliCompressSync]] as const) {
    const reply = await connectCall('application/proto', encoding, compress(huge))
    t.match(reply, { status: 429, code: 'resource_exhausted' }, `Connect unary, ${encoding}`)
    const grpcWeb = await grpcCall('application/grpc-web+proto', encoding, envelope(compress(huge), 0x01))
    t.match(grpcWeb, { status: 200, grpcStatus: '8' }, `gRPC-Web, ${encoding}`)
  }
})

t.test('valid gzip and br Connect calls and a gzip gRPC-Web call still go through', async (t) => {
  for (const [encoding, compress] of [['gzip', gzipSync], ['br', brotliCompressSync]] as const) {
    const reply = await connectCall('application/proto', encoding, compress(ping(`over ${encoding}`)))
    t.equal(reply.status, 200, `Connect unary, ${encoding}`)
    t.equal(fromBinary(PingResponseSchema, reply.body).message, `over ${encoding}`)
  }
  // An empty body is an empty message, compressed or not (Connect does not decompress it).
  const empty = await connectCall('application/proto', 'gzip', Buffer.alloc(0))
  t.equal(empty.status, 200, 'Connect unary, gzip, empty body')
  t.equal(fromBinary(PingResponseSchema, empty.body).message, '')
  const json = await connectCall('application/json', 'br', brotliCompressSync(JSON.stringify({ message: 'over br JSON' })))
  t.equal(json.status, 200, 'Connect unary JSON, br')
  t.equal((JSON.parse(json.body.toString()) as { message?: unknown }).message, 'over br JSON')
  const grpcWeb = await grpcCall('application/grpc-web+proto', 'gzip', envelope(gzipSync(ping('over gRPC-Web')), 0x01))
  t.match(grpcWeb, { status: 200, grpcStatus: '0' })
  const data = grpcWeb.frames.find((frame) => frame.flags === 0)
  t.equal(data === undefined ? undefined : fromBinary(PingResponseSchema, data.data).message, 'over gRPC-Web')
})
