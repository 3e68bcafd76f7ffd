// The last pass over the OpenAPI document @fastify/swagger builds (openapi.ts): what holds for the
// whole document rather than one route's schema.
// - Schemas keep only the keywords of JSON Schema 2020-12 and OpenAPI: validation-only keywords of
//   the TypeBox schemas (`errorMessage`, read by the core's formatter) are dropped here, never from
//   the schemas that validate; a body that may be absent (`Type.Undefined()` in a union) becomes an
//   optional request body.
// - Every response names the headers the server sends with it, from components.headers.
// - A multipart form's parts get their `encoding` (the media types its file part takes).
// - Every tag a route uses is listed with its description.
import type { RouteFacts } from './openapi-responses.js'

export interface DescribedRoute {
  facts: RouteFacts
  /** Its 201 carries Location. */
  location: boolean
}

type Json = Record<string, unknown>

/** What the document says of each tag (a route's tag missing here fails the document test). */
export const TAGS: Record<string, string> = {
  health: 'Health of this instance and its dependencies',
  auth: 'Magic-link sign-in, the session cookie, sign-out and account deletion',
  rooms: 'Rooms: create, list, read, change, delete',
  sparks: 'Sparks: the tiles of a room, with optimistic concurrency (ETag / If-Match)',
  canvas: "Positions, layout and cursors on a room's canvas",
  sync: 'The event stream (Server-Sent Events)',
  offices: 'Offices, their members and invitations',
  users: 'Profiles, avatars, search and display info',
  rtc: 'Video/voice tokens and configuration',
  shelves: 'Shelves of links',
  passport: 'The professional profile, and CV import',
  uploads: 'Files: upload, read, delete',
  safety: 'Reports, appeals, inbox, messages of the day, text classification',
  widgets: 'The widget catalogue and room installations',
  admin: 'Administration, with an access token of the identity provider'
}

const header = (description: string, schema: Json = { type: 'integer' }): Json => ({ description, schema })

/** The headers the server sends, described once. */
const HEADERS: Record<string, Json> = {
  'X-Request-Id': header("This request's id (the client's own when it sent a fit one): quote it when reporting a problem", { type: 'string' }),
  'RateLimit-Limit': header("Requests allowed in the window of this operation's tier"),
  'RateLimit-Remaining': header('Requests left in the window'),
  'RateLimit-Reset': header('Seconds until the window resets'),
  'X-RateLimit-Limit': header('As RateLimit-Limit'),
  'X-RateLimit-Remaining': header('As RateLimit-Remaining'),
  'X-RateLimit-Reset': header('As RateLimit-Reset'),
  'Retry-After': header('Seconds to wait before retrying'),
  ETag: header("The resource's version, for If-Match and If-None-Match", { type: 'string' }),
  Location: header('On a 201: the URL of the resource this request created; on a redirect: where to go', { type: 'string' }),
  'Idempotent-Replayed': header('`true` on an answer replayed to a retry with the same Idempotency-Key', { type: 'string', enum: ['true'] })
}

const ref = (name: string): Json => ({ $ref: `#/components/headers/${name}` })
const RATE_LIMIT = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']

/** The document's fixed parts (openapi.ts adds the security schemes). */
export const DOCUMENT_BASE = {
  openapi: '3.1.0',
  info: {
    title: '',
    version: '1',
    description: 'The REST API under /api. Errors use one envelope `{ error, message, details? }`. RPC is described by proto/. ' +
      'Conventions (errors, pagination, retries, ETags): docs/api/conventions.md.'
  },
  servers: [{ url: '/', description: 'The host that serves this document' }],
  tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
  components: { headers: HEADERS }
}

/** The headers a response of this route with this status carries. */
function headersOf (route: DescribedRoute | undefined, status: string): Json {
  const headers: Json = { 'X-Request-Id': ref('X-Request-Id') }
  if (route === undefined) return headers
  const { facts } = route
  const code = Number(status)
  if (facts.policy.tier !== 'exempt') for (const name of RATE_LIMIT) headers[name] = ref(name)
  if (code === 429 || code === 503 || (code === 409 && facts.idempotent)) headers['Retry-After'] = ref('Retry-After')
  if (facts.etag && (code === 200 || code === 201 || code === 304)) headers.ETag = ref('ETag')
  if ((code === 201 && route.location) || (code >= 300 && code < 400 && code !== 304)) headers.Location = ref('Location')
  if (facts.idempotent && code < 500 && code !== 304) headers['Idempotent-Replayed'] = ref('Idempotent-Replayed')
  return headers
}

/** Keywords a schema may carry in the document: JSON Schema 2020-12's and OpenAPI's. */
const SCHEMA_KEYWORDS = new Set([
  '$ref', '$id', '$schema', '$anchor', '$defs', '$comment', '$dynamicRef', '$dynamicAnchor',
  'type', 'enum', 'const', 'format', 'title', 'description', 'default', 'examples', 'example', 'deprecated', 'readOnly', 'writeOnly',
  'multipleOf', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum', 'maxLength', 'minLength', 'pattern',
  'items', 'prefixItems', 'contains', 'maxItems', 'minItems', 'uniqueItems', 'maxContains', 'minContains', 'unevaluatedItems',
  'properties', 'patternProperties', 'additionalProperties', 'propertyNames', 'required', 'maxProperties', 'minProperties',
  'dependentRequired', 'dependentSchemas', 'unevaluatedProperties', 'allOf', 'anyOf', 'oneOf', 'not', 'if', 'then', 'else',
  'contentMediaType', 'contentEncoding', 'contentSchema', 'discriminator', 'xml', 'externalDocs'
])
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'dependentSchemas'])
const SCHEMA_LISTS = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems'])

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * The schema with only document keywords, and whether it allowed `undefined` (TypeBox's
 * `Type.Undefined()`, which no JSON value is: that branch is dropped).
 */
function cleanSchema (schema: unknown): { schema: unknown, undefinedAllowed: boolean } {
  if (!isObject(schema)) return { schema, undefinedAllowed: false }
  let undefinedAllowed = schema.type === 'undefined'
  const clean: Json = {}
  for (const [key, value] of Object.entries(schema)) {
    if (!SCHEMA_KEYWORDS.has(key) && !key.startsWith('x-')) continue
    if (SCHEMA_MAPS.has(key) && isObject(value)) {
      clean[key] = Object.fromEntries(Object.entries(value).map(([name, member]) => [name, cleanSchema(member).schema]))
    } else if (SCHEMA_LISTS.has(key) && Array.isArray(value)) {
      const members = value.map(cleanSchema)
      undefinedAllowed ||= members.some((m) => m.undefinedAllowed && isObject(m.schema) && m.schema.type === 'undefined')
      clean[key] = members.map((m) => m.schema).filter((member) => !(isObject(member) && member.type === 'undefined'))
    } else if (isObject(value) && key !== 'discriminator' && key !== 'xml' && key !== 'externalDocs' && key !== 'default' && key !== 'example' && key !== 'const') {
      clean[key] = cleanSchema(value).schema
    } else {
      clean[key] = value
    }
  }
  // `anyOf: [X]` left by a dropped `undefined`: X itself.
  for (const key of ['anyOf', 'oneOf']) {
    const members = clean[key]
    if (Array.isArray(members) && members.length === 1 && isObject(members[0])) {
      delete clean[key]
      Object.assign(clean, members[0], clean)
    }
  }
  return { schema: clean, undefinedAllowed }
}

/** Cleans the schema of every media type of `content`; a multipart form gets its parts' encoding. */
function cleanContent (content: unknown): boolean {
  let undefinedAllowed = false
  if (!isObject(content)) return false
  for (const [mediaType, media] of Object.entries(content)) {
    if (!isObject(media)) continue
    const cleaned = cleanSchema(media.schema)
    undefinedAllowed ||= cleaned.undefinedAllowed
    media.schema = cleaned.schema
    if (mediaType === 'multipart/form-data' && isObject(media.schema)) media.encoding = encodingOf(media.schema)
  }
  return undefinedAllowed
}

/** A form's `encoding`: its file parts' media types (`x-media-types` on the part), text for the rest. */
function encodingOf (form: Json): Json {
  const encoding: Json = {}
  for (const [name, part] of Object.entries(isObject(form.properties) ? form.properties : {})) {
    const types = isObject(part) ? part['x-media-types'] : undefined
    encoding[name] = { contentType: typeof types === 'string' ? types : 'text/plain' }
  }
  return encoding
}

/** Finishes the document: see the file's comment. */
export function finishDocument (document: Json, routes: ReadonlyMap<string, DescribedRoute>): Json {
  const components = document.components as Json
  for (const [name, schema] of Object.entries(components.schemas as Json)) (components.schemas as Json)[name] = cleanSchema(schema).schema
  for (const [path, item] of Object.entries(document.paths as Json)) {
    for (const [method, operation] of Object.entries(item as Json)) {
      if (!isObject(operation)) continue
      const route = routes.get(`${method} ${path}`)
      for (const parameter of (operation.parameters ?? []) as Json[]) parameter.schema = cleanSchema(parameter.schema).schema
      const body = operation.requestBody
      if (isObject(body) && cleanContent(body.content)) body.required = false
      for (const [status, response] of Object.entries(operation.responses as Json)) {
        if (!isObject(response)) continue
        cleanContent(response.content)
        response.headers = { ...(isObject(response.headers) ? response.headers : {}), ...headersOf(route, status) }
      }
      operation.responses = {
        ...(operation.responses as Json),
        default: {
          description: 'Any other refusal of HTTP itself (408 RequestTimeout, 431 RequestHeaderFieldsTooLarge, 500 InternalServerError), in the same envelope',
          headers: headersOf(undefined, 'default'),
          content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } }
        }
      }
    }
  }
  return document
}
