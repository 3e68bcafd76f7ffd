// Connect answers a binary request body that is not a valid message of its method with `internal`
// (HTTP 500, or grpc-status 13), as if the server had failed. Here such a body is found first and
// reported as the client's mistake, `invalid_argument`. Connect reads the request body from the Node
// request as an async iterable; for a binary unary call that iterable is replaced by one that reads
// the whole body (at most the gateway's size limit), parses it once, and either yields it unchanged
// or throws the Connect error, which Connect's handler then sends as the reply in the caller's
// protocol. Connect unary bodies are one bare message; gRPC and gRPC-Web bodies are enveloped
// messages (1 flag byte, 4 bytes of big-endian length, the message).
import { fromBinary, type DescMessage } from '@bufbuild/protobuf'
import { Code, ConnectError } from '@connectrpc/connect'
import type { UniversalHandler } from '@connectrpc/connect/protocol'
import type { FastifyInstance } from 'fastify'
import type { IncomingMessage } from 'node:http'

const CONNECT_UNARY_BINARY = /^application\/proto\s*(;|$)/i
const ENVELOPED_BINARY = /^application\/grpc(-web)?(\+proto)?\s*(;|$)/i
const COMPRESSED_FLAG = 0b1

type Framing = 'bare' | 'enveloped'

export interface BinaryRequestCheck {
  /** Checks the binary bodies of these methods: the handlers the Connect router serves. */
  serve (handlers: readonly UniversalHandler[]): void
}

export function checkBinaryRequests (app: FastifyInstance, readMaxBytes: number): BinaryRequestCheck {
  const inputs = new Map<string, DescMessage>()

  app.addHook('onRequest', (request, _reply, done) => {
    const framing = framingOf(request.headers['content-type'])
    const input = framing !== undefined ? inputs.get(request.routeOptions.url ?? '') : undefined
    // A compressed Connect body is Connect's to decompress (and to check); enveloped messages say
    // one by one whether they are compressed.
    const encoding = request.headers['content-encoding']
    const compressed = framing === 'bare' && encoding !== undefined && encoding !== 'identity'
    if (input !== undefined && framing !== undefined && !compressed) checkedBody(request.raw, input, framing, readMaxBytes)
    done()
  })

  return {
    serve (handlers) {
      for (const handler of handlers) inputs.set(`${app.prefix}${handler.requestPath}`, handler.method.input)
    }
  }
}

function framingOf (contentType: string | undefined): Framing | undefined {
  if (contentType === undefined) return undefined
  if (CONNECT_UNARY_BINARY.test(contentType)) return 'bare'
  if (ENVELOPED_BINARY.test(contentType)) return 'enveloped'
  return undefined
}

/** The uncompressed messages of a body. A truncated envelope is left for Connect to report. */
function messagesOf (body: Buffer, framing: Framing): Buffer[] {
  if (framing === 'bare') return [body]
  const messages: Buffer[] = []
  let offset = 0
  while (offset + 5 <= body.length) {
    const flags = body.readUInt8(offset)
    const length = body.readUInt32BE(offset + 1)
    const end = offset + 5 + length
    if (end > body.length) break
    if ((flags & COMPRESSED_FLAG) === 0) messages.push(body.subarray(offset + 5, end))
    offset = end
  }
  return messages
}

function checkedBody (raw: IncomingMessage, input: DescMessage, framing: Framing, readMaxBytes: number): void {
  const chunks = raw[Symbol.asyncIterator].bind(raw)
  Object.defineProperty(raw, Symbol.asyncIterator, {
    configurable: true,
    value: async function * (): AsyncGenerator<Uint8Array> {
      const received: Buffer[] = []
      let size = 0
      for await (const chunk of chunks()) {
        size += (chunk as Buffer).length
        if (size > readMaxBytes) {
          throw new ConnectError(`message size ${size} is larger than configured readMaxBytes ${readMaxBytes}`, Code.ResourceExhausted)
        }
        received.push(chunk as Buffer)
      }
      const body = Buffer.concat(received)
      for (const message of messagesOf(body, framing)) {
        try {
          fromBinary(input, message)
        } catch (error) {
          throw new ConnectError(`cannot decode message ${input.typeName} from binary: ${error instanceof Error ? error.message : String(error)}`, Code.InvalidArgument)
        }
      }
      yield body
    }
  })
}
