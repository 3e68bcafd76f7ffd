// gRPC server reflection, v1 and its predecessor v1alpha (DECISIONS §17): what `grpcurl list` and
// `describe`, grpcui, Postman and `buf curl` without a schema read. Connect-ES has none of its own
// (connectrpc/connect-es#507), so it is answered here from the descriptors protoc-gen-es embeds in
// the generated code: every service the gateway serves, each file as its FileDescriptorProto with
// the files it imports, so a client needs no proto file. One request, one answer, in order, on a
// bidirectional stream; what is asked for and not known is an error answer (NOT_FOUND) on the
// stream, which stays open, as the protocol says.
import { createRegistry, toBinary, type DescFile, type DescService, type Registry } from '@bufbuild/protobuf'
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt'
import { Code, type ServiceImpl } from '@connectrpc/connect'
import { ServerReflection } from '../gen/grpc/reflection/v1/reflection_pb.js'
import { ServerReflection as ServerReflectionV1alpha } from '../gen/grpc/reflection/v1alpha/reflection_pb.js'

/** The reflection services themselves, to list beside the others. */
export const REFLECTION_SERVICES = [ServerReflection, ServerReflectionV1alpha] as const

/** A request of either version (their fields are the same). */
interface Request {
  host: string
  messageRequest:
  | { case: 'fileByFilename' | 'fileContainingSymbol' | 'allExtensionNumbersOfType' | 'listServices', value: string }
  | { case: 'fileContainingExtension', value: { containingType: string, extensionNumber: number } }
  | { case: undefined, value?: undefined }
}

/** An answer of either version, without its echo of the request. */
type Answer =
  | { case: 'fileDescriptorResponse', value: { fileDescriptorProto: Uint8Array[] } }
  | { case: 'allExtensionNumbersResponse', value: { baseTypeName: string, extensionNumber: number[] } }
  | { case: 'listServicesResponse', value: { service: Array<{ name: string }> } }
  | { case: 'errorResponse', value: { errorCode: number, errorMessage: string } }

/** What reflection knows: the served services and every file they need. */
export interface Reflection {
  answer: (request: Request) => Answer
}

export function reflectionOf (services: readonly DescService[]): Reflection {
  const files = new Map<string, DescFile>()
  const add = (file: DescFile): void => {
    if (files.has(file.proto.name)) return
    files.set(file.proto.name, file)
    for (const dependency of file.dependencies) add(dependency)
  }
  for (const service of services) add(service.file)
  const registry: Registry = createRegistry(...files.values())
  const names = [...new Set(services.map((s) => s.typeName))].sort()
  const encoded = new Map<string, Uint8Array>()
  const bytesOf = (file: DescFile): Uint8Array => {
    let bytes = encoded.get(file.proto.name)
    if (bytes === undefined) encoded.set(file.proto.name, bytes = toBinary(FileDescriptorProtoSchema, file.proto))
    return bytes
  }

  /** A file and every file it imports, itself first (clients build their pool from them). */
  const withImports = (file: DescFile): Answer => {
    const seen = new Set<string>()
    const out: Uint8Array[] = []
    const visit = (f: DescFile): void => {
      if (seen.has(f.proto.name)) return
      seen.add(f.proto.name)
      out.push(bytesOf(f))
      for (const dependency of f.dependencies) visit(dependency)
    }
    visit(file)
    return { case: 'fileDescriptorResponse', value: { fileDescriptorProto: out } }
  }

  const notFound = (what: string): Answer => ({ case: 'errorResponse', value: { errorCode: Code.NotFound, errorMessage: `${what} not found` } })

  /** The file declaring a symbol: a message, enum, service or extension, or a method, field or enum value of one. */
  const fileOfSymbol = (symbol: string): DescFile | undefined => {
    const found = registry.get(symbol)
    if (found !== undefined) return found.file
    const dot = symbol.lastIndexOf('.')
    if (dot < 0) return undefined
    const parent = registry.get(symbol.slice(0, dot))
    const member = symbol.slice(dot + 1)
    switch (parent?.kind) {
      case 'service': return parent.methods.some((m) => m.name === member) ? parent.file : undefined
      case 'message': return parent.fields.some((f) => f.name === member) || parent.oneofs.some((o) => o.name === member) ? parent.file : undefined
      case 'enum': return parent.values.some((v) => v.name === member) ? parent.file : undefined
      default: return undefined
    }
  }

  return {
    answer (request) {
      const asked = request.messageRequest
      switch (asked.case) {
        case 'listServices':
          return { case: 'listServicesResponse', value: { service: names.map((name) => ({ name })) } }
        case 'fileByFilename': {
          const file = files.get(asked.value)
          return file === undefined ? notFound(`file ${asked.value}`) : withImports(file)
        }
        case 'fileContainingSymbol': {
          const file = fileOfSymbol(asked.value)
          return file === undefined ? notFound(`symbol ${asked.value}`) : withImports(file)
        }
        case 'fileContainingExtension': {
          const { containingType, extensionNumber } = asked.value
          const message = registry.getMessage(containingType)
          const extension = message === undefined ? undefined : registry.getExtensionFor(message, extensionNumber)
          return extension === undefined ? notFound(`extension ${extensionNumber} of ${containingType}`) : withImports(extension.file)
        }
        case 'allExtensionNumbersOfType': {
          const message = registry.getMessage(asked.value)
          if (message === undefined) return notFound(`type ${asked.value}`)
          // No file the gateway serves extends a message.
          return { case: 'allExtensionNumbersResponse', value: { baseTypeName: message.typeName, extensionNumber: [] } }
        }
        default:
          return { case: 'errorResponse', value: { errorCode: Code.InvalidArgument, errorMessage: 'the request asks for nothing' } }
      }
    }
  }
}

/** The two versions' implementations: the same answers, each in its own messages. */
export function reflectionServices (reflection: Reflection): { v1: ServiceImpl<typeof ServerReflection>, v1alpha: ServiceImpl<typeof ServerReflectionV1alpha> } {
  return {
    v1: {
      async * serverReflectionInfo (requests) {
        for await (const request of requests) yield { validHost: request.host, originalRequest: request, messageResponse: reflection.answer(request) }
      }
    },
    v1alpha: {
      async * serverReflectionInfo (requests) {
        for await (const request of requests) yield { validHost: request.host, originalRequest: request, messageResponse: reflection.answer(request) }
      }
    }
  }
}
