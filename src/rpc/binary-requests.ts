// Connect answers a binary request body that is not a valid message of its method with `internal`
// (HTTP 500), as if the server had failed. Here such a body is found first and reported as the
// client's mistake, `invalid_argument`. Connect reads the request body from the Node request as an
// async iterable; for a binary unary call that iterable is replaced by one that reads the whole body
// (at most the gateway's size limit), parses it once, and either yields it unchanged or throws the
// Connect error, which Connect's handler then sends as the reply.
import { fromBinary, type DescMessage, type DescService } from '@bufbuild/protobuf'
import { Code, ConnectError } from '@connectrpc/connect'
import type { FastifyInstance } from 'fastify'
import type { IncomingMessage } from 'node:http'

const BINARY_UNARY = /^application\/proto\s*(;|$)/i

export function checkBinaryRequests (app: FastifyInstance, services: readonly DescService[], readMaxBytes: number): void {
  const inputs = new Map<string, DescMessage>()
  for (const service of services) {
    for (const method of service.methods) inputs.set(`${app.prefix}/${service.typeName}/${method.name}`, method.input)
  }

  app.addHook('onRequest', (request, _reply, done) => {
    const type = request.headers['content-type']
    const encoding = request.headers['content-encoding']
    const input = type !== undefined && BINARY_UNARY.test(type) ? inputs.get(request.routeOptions.url ?? '') : undefined
    // Compressed bodies are Connect's to decompress (and to check).
    if (input !== undefined && (encoding === undefined || encoding === 'identity')) checkedBody(request.raw, input, readMaxBytes)
    done()
  })
}

function checkedBody (raw: IncomingMessage, input: DescMessage, readMaxBytes: number): void {
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
      try {
        fromBinary(input, body)
      } catch (error) {
        throw new ConnectError(`cannot decode message ${input.typeName} from binary: ${error instanceof Error ? error.message : String(error)}`, Code.InvalidArgument)
      }
      yield body
    }
  })
}
