// Enumerations are closed (DECISIONS §16): a request whose enum field holds a name or a number its
// enum does not define is `invalid_argument` naming the field, never read as the default value.
// Protobuf's own rules would let both through: proto3 enums are open, so a binary message keeps an
// unknown number as it is, and Connect parses JSON ignoring unknown fields, which protobuf-es extends
// to unknown enum names (the field is left at its default: `role: "OWNER"` became PUBLISHER). So the
// raw JSON is checked before Connect parses it, and a binary message once it is decoded; both paths
// of a call (connect-unary.ts, request-bodies.ts) ask the check of their method's input here. Which
// fields are enums comes from the message's descriptor, so a new field or method is covered as it
// is generated; a message with no enum anywhere inside it is not walked at all.
import type { DescEnum, DescField, DescMessage } from '@bufbuild/protobuf'
import type { ConnectError } from '@connectrpc/connect'
import { validationError } from '../core/errors.js'
import { toConnectError } from './errors.js'

export interface EnumCheck {
  /** Throws when a JSON request body names an enum value its enum lacks. A body that is not JSON
   *  passes: Connect's parser refuses it in its own words. */
  json (body: Uint8Array): void
  /** Throws when a decoded message holds an enum number its enum lacks. */
  message (message: object): void
}

const checks = new WeakMap<DescMessage, EnumCheck | null>()

/** The check of a method's input, or undefined when no field in it (however deep) is an enum. */
export function enumCheckOf (input: DescMessage): EnumCheck | undefined {
  let check = checks.get(input)
  if (check === undefined) {
    check = holdsEnum(input, new Set()) ? { json: (body) => { checkJson(input, parsedJson(body), '') }, message: (message) => { checkMessage(input, message, '') } } : null
    checks.set(input, check)
  }
  return check ?? undefined
}

const decoder = new TextDecoder()

function parsedJson (body: Uint8Array): unknown {
  try {
    return JSON.parse(decoder.decode(body))
  } catch {
    return undefined
  }
}

/** Well-known types have JSON forms of their own (a Timestamp is a string) and no enum of ours. */
function isWellKnown (message: DescMessage): boolean {
  return message.typeName.startsWith('google.protobuf.')
}

function holdsEnum (message: DescMessage, seen: Set<DescMessage>): boolean {
  if (seen.has(message) || isWellKnown(message)) return false
  seen.add(message)
  return message.fields.some((field) => enumOf(field) !== undefined || (messageOf(field) !== undefined && holdsEnum(messageOf(field)!, seen)))
}

function enumOf (field: DescField): DescEnum | undefined {
  switch (field.fieldKind) {
    case 'enum': return field.enum
    case 'list': return field.listKind === 'enum' ? field.enum : undefined
    case 'map': return field.mapKind === 'enum' ? field.enum : undefined
    default: return undefined
  }
}

function messageOf (field: DescField): DescMessage | undefined {
  switch (field.fieldKind) {
    case 'message': return field.message
    case 'list': return field.listKind === 'message' ? field.message : undefined
    case 'map': return field.mapKind === 'message' ? field.message : undefined
    default: return undefined
  }
}

function unknownValue (field: string, enumDesc: DescEnum, value: unknown): ConnectError {
  const names = enumDesc.values.map((v) => v.name).join(', ')
  return toConnectError(validationError(field, `${JSON.stringify(value)} is not a value of ${enumDesc.name} (${names})`), () => {})
}

function isDefined (enumDesc: DescEnum, value: unknown): boolean {
  if (typeof value === 'number') return enumDesc.values.some((v) => v.number === value)
  if (typeof value === 'string') return enumDesc.values.some((v) => v.name === value)
  return false
}

/** Each element of a list or each value of a map, with the path naming it. */
function elementsOf (field: DescField, value: unknown, path: string): Array<[string, unknown]> {
  if (field.fieldKind === 'list' && Array.isArray(value)) return value.map((item, i) => [`${path}[${i}]`, item])
  if (field.fieldKind === 'map' && typeof value === 'object' && value !== null) return Object.entries(value).map(([key, item]) => [`${path}[${JSON.stringify(key)}]`, item])
  if (field.fieldKind === 'list' || field.fieldKind === 'map') return []
  return [[path, value]]
}

/** Proto JSON: a field is named by its JSON name or its proto name; null is the default value. A
 *  value of the wrong JSON type is left for Connect's parser, which refuses it itself. */
function checkJson (message: DescMessage, json: unknown, prefix: string): void {
  if (typeof json !== 'object' || json === null || Array.isArray(json) || isWellKnown(message)) return
  const object = json as Record<string, unknown>
  for (const field of message.fields) {
    const key = Object.hasOwn(object, field.jsonName) ? field.jsonName : Object.hasOwn(object, field.name) ? field.name : undefined
    if (key === undefined) continue
    const enumDesc = enumOf(field)
    const inner = messageOf(field)
    for (const [path, value] of elementsOf(field, object[key], `${prefix}${field.jsonName}`)) {
      if (value === null) continue
      if (enumDesc !== undefined && (typeof value === 'string' || Number.isInteger(value)) && !isDefined(enumDesc, value)) throw unknownValue(path, enumDesc, value)
      if (inner !== undefined) checkJson(inner, value, `${path}.`)
    }
  }
}

/** A decoded message (protobuf-es: fields under their local names, a oneof as `{ case, value }`). */
function checkMessage (message: DescMessage, decoded: object, prefix: string): void {
  if (isWellKnown(message)) return
  const object = decoded as Record<string, unknown>
  for (const field of message.fields) {
    const enumDesc = enumOf(field)
    const inner = messageOf(field)
    if (enumDesc === undefined && inner === undefined) continue
    let value = object[field.localName]
    if (field.oneof !== undefined) {
      const chosen = object[field.oneof.localName] as { case?: string, value?: unknown } | undefined
      if (chosen?.case !== field.localName) continue
      value = chosen.value
    }
    for (const [path, item] of elementsOf(field, value, `${prefix}${field.jsonName}`)) {
      if (item === undefined) continue // an unset optional field
      if (enumDesc !== undefined && !isDefined(enumDesc, item)) throw unknownValue(path, enumDesc, item)
      if (inner !== undefined && typeof item === 'object' && item !== null) checkMessage(inner, item, `${path}.`)
    }
  }
}
