// Connect answers `internal` (HTTP 500, or grpc-status 13), as if the server had failed, to request
// bodies that are the client's mistake: a binary body that is not a valid message of its method, a
// compressed body that does not decompress (not brotli, or gzip cut short), and a gRPC / gRPC-Web
// message flagged compressed when no grpc-encoding says how. Here such a body is found first and
// reported as `invalid_argument`; one that decompresses past the gateway's size limit is
// `resource_exhausted`, as Connect says itself. Each handler the Connect router serves is wrapped:
// the request body Connect would read (an async iterable) is replaced by one that reads the whole
// body (at most the size limit), checks it once, and either yields it unchanged (Connect then
// decompresses and parses it again, itself) or throws the Connect error, which Connect's handler
// then sends as the reply in the caller's protocol. Nothing of Node's request is touched.
// Connect unary bodies are one bare message, compressed as Content-Encoding says. gRPC and gRPC-Web
// bodies are enveloped messages (1 flag byte, 4 bytes of big-endian length, the message), each
// flagged compressed or not, all with the request's grpc-encoding. Binary messages are decompressed
// and parsed; JSON ones only decompressed, as Connect reports bad JSON as `invalid_argument` itself.
// Either kind is also held to its method's enumerations (closed-enums.ts), which Connect leaves open.
// An encoding the gateway does not accept is left to Connect, which refuses it (`unimplemented`)
// before it reads the body. Plain Connect unary calls (connect-unary.ts) decode their own bodies.
import { promisify } from 'node:util'
import { brotliDecompress, gunzip } from 'node:zlib'
import { fromBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf'
import type { ConnectError } from '@connectrpc/connect'
import type { UniversalHandler, UniversalServerRequest } from '@connectrpc/connect/protocol'
import { enumCheckOf, type EnumCheck } from './closed-enums.js'
import { rpcRefusal } from './errors.js'

const CONNECT_UNARY = /^application\/(proto|json)\s*(;|$)/i
const ENVELOPED = /^application\/grpc(-web)?(\+(proto|json))?\s*(;|$)/i
const JSON_MESSAGES = /^application\/((grpc(-web)?\+)?json)\s*(;|$)/i
const COMPRESSED_FLAG = 0b1

type Framing = 'bare' | 'enveloped'

interface Compression {
  name: string
  decompress: (bytes: Buffer, options: { maxOutputLength: number }) => Promise<Buffer>
}

/** The encodings the gateway accepts: Connect's defaults, with the same zlib functions. */
const COMPRESSIONS = new Map<string, Compression>([
  ['gzip', { name: 'gzip', decompress: promisify(gunzip) }],
  ['br', { name: 'br', decompress: promisify(brotliDecompress) }]
])

/** What a request body holds, so far as the check needs to know. */
interface Body {
  framing: Framing
  /** Protobuf binary messages, parsed here; JSON ones are only decompressed. */
  binary: boolean
  /** How compressed messages are compressed; undefined when the request names no encoding. */
  compression: Compression | undefined
}

interface Message {
  bytes: Buffer
  compressed: boolean
}

/** Wraps each handler in place (the router's own list, read by connect-fastify once its routes are
 *  registered) so that its request bodies are checked before Connect reads them; `readMaxBytes`
 *  names each service's size limit. */
export function checkRequestBodies (handlers: UniversalHandler[], readMaxBytes: (service: string) => number): void {
  for (const [index, handler] of handlers.entries()) handlers[index] = checking(handler, readMaxBytes(handler.service.typeName))
}

function checking (handler: UniversalHandler, readMaxBytes: number): UniversalHandler {
  // A stream of requests (server reflection's, the only one) is read message by message as it
  // arrives, each held to the limit by Connect: reading it whole first would wait for the client to
  // close its side, which a bidirectional client does only at the end.
  const kind = handler.method.methodKind
  if (kind === 'client_streaming' || kind === 'bidi_streaming') return handler
  const input = handler.method.input
  const enums = enumCheckOf(input)
  const checked = async (request: UniversalServerRequest): ReturnType<UniversalHandler> => {
    const body = bodyOf(request.header, enums !== undefined)
    if (body === undefined || !isByteStream(request.body)) return await handler(request)
    return await handler({ ...request, body: checkedBody(request.body, input, body, readMaxBytes, enums) })
  }
  const { protocolNames, service, method, requestPath, allowedMethods, supportedContentType } = handler
  return Object.assign(checked, { protocolNames, service, method, requestPath, allowedMethods, supportedContentType })
}

function isByteStream (body: UniversalServerRequest['body']): body is AsyncIterable<Uint8Array> {
  return typeof body === 'object' && body !== null && Symbol.asyncIterator in body
}

/** The body to check, or undefined when there is nothing Connect would misreport (or let through:
 *  a JSON enum value the method's enum lacks, closed-enums.ts). */
function bodyOf (headers: Headers, holdsEnum: boolean): Body | undefined {
  const contentType = headers.get('content-type') ?? ''
  const framing = CONNECT_UNARY.test(contentType) ? 'bare' : ENVELOPED.test(contentType) ? 'enveloped' : undefined
  if (framing === undefined) return undefined
  // Connect unary names its compression in Content-Encoding, gRPC and gRPC-Web in grpc-encoding.
  const encoding = headers.get(framing === 'bare' ? 'content-encoding' : 'grpc-encoding') ?? 'identity'
  const compression = COMPRESSIONS.get(encoding)
  if (encoding !== 'identity' && compression === undefined) return undefined
  const binary = !JSON_MESSAGES.test(contentType)
  // An uncompressed Connect JSON body is Connect's to check (its parse errors are invalid_argument),
  // but for its enum values.
  if (framing === 'bare' && !binary && compression === undefined && !holdsEnum) return undefined
  return { framing, binary, compression }
}

/** The messages of a body. A truncated envelope is left for Connect to report. */
function messagesOf (body: Buffer, { framing, compression }: Body): Message[] {
  if (framing === 'bare') return [{ bytes: body, compressed: compression !== undefined }]
  const messages: Message[] = []
  let offset = 0
  while (offset + 5 <= body.length) {
    const flags = body.readUInt8(offset)
    const length = body.readUInt32BE(offset + 1)
    const end = offset + 5 + length
    if (end > body.length) break
    messages.push({ bytes: body.subarray(offset + 5, end), compressed: (flags & COMPRESSED_FLAG) !== 0 })
    offset = end
  }
  return messages
}

async function * checkedBody (chunks: AsyncIterable<Uint8Array>, input: DescMessage, body: Body, readMaxBytes: number, enums: EnumCheck | undefined): AsyncGenerator<Uint8Array> {
  const received: Uint8Array[] = []
  let size = 0
  for await (const chunk of chunks) {
    size += chunk.length
    if (size > readMaxBytes) throw readLimitError(size, readMaxBytes)
    received.push(chunk)
  }
  const bytes = Buffer.concat(received)
  for (const message of messagesOf(bytes, body)) {
    const plain = message.compressed ? await decompressed(message.bytes, input, body.compression, readMaxBytes) : message.bytes
    if (body.binary) {
      const message = decodeBinaryMessage(plain, input)
      enums?.message(message)
    } else {
      enums?.json(plain)
    }
  }
  yield bytes
}

/** A body past the gateway's size limit, in Connect's words. */
export function readLimitError (size: number | undefined, readMaxBytes: number): ConnectError {
  return rpcRefusal('body_too_large', `message size ${size ?? '(unknown)'} is larger than configured readMaxBytes ${readMaxBytes}`)
}

/** A binary message of the method; bytes that do not decode are `invalid_argument`. */
export function decodeBinaryMessage<Desc extends DescMessage> (bytes: Uint8Array, input: Desc): MessageShape<Desc> {
  try {
    return fromBinary(input, bytes)
  } catch (error) {
    throw rpcRefusal('malformed_body', `cannot decode message ${input.typeName} from binary: ${error instanceof Error ? error.message : String(error)}`)
  }
}

async function decompressed (bytes: Buffer, input: DescMessage, compression: Compression | undefined, readMaxBytes: number): Promise<Buffer> {
  if (compression === undefined) {
    throw rpcRefusal('malformed_body', `message ${input.typeName} is flagged compressed, but the request names no grpc-encoding`)
  }
  // Connect takes empty compressed bytes for an empty message, without decompressing them.
  if (bytes.length === 0) return bytes
  try {
    return await compression.decompress(bytes, { maxOutputLength: readMaxBytes })
  } catch (error) {
    throw decompressionError(error, input, compression, readMaxBytes)
  }
}

/** Bytes that are not gzip (Z_DATA_ERROR) or brotli (ERR__ERROR_FORMAT_…), or end too soon (Z_BUF_ERROR). */
function isBadData (code: unknown): boolean {
  return code === 'Z_DATA_ERROR' || code === 'Z_BUF_ERROR' || (typeof code === 'string' && code.includes('_ERROR_FORMAT_'))
}

/** The client's mistakes as Connect errors; any other failure (out of memory) is the server's, `internal`. */
function decompressionError (error: unknown, input: DescMessage, compression: Compression, readMaxBytes: number): unknown {
  const code = error instanceof Error ? (error as NodeJS.ErrnoException).code : undefined
  if (code === 'ERR_BUFFER_TOO_LARGE') {
    return rpcRefusal('body_too_large', `message ${input.typeName} is larger than configured readMaxBytes ${readMaxBytes} after decompression`)
  }
  if (isBadData(code)) {
    return rpcRefusal('malformed_body', `cannot decompress message ${input.typeName} with ${compression.name}: ${(error as Error).message}`)
  }
  return error
}
