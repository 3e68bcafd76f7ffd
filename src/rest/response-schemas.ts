// Response schemas for REST routes (DECISIONS §15: every route describes its responses): the `{ data }`
// envelope, the paged list envelope, and the error envelope of src/rest/errors.ts. Fastify serialises
// a reply through them, so a field a schema does not name never leaves the server.
import { Type, type TSchema } from 'typebox'

export const ErrorEnvelope = Type.Object({
  error: Type.String(),
  message: Type.String(),
  details: Type.Optional(Type.Array(Type.Object({ field: Type.String(), issue: Type.String() }))),
  retryAfter: Type.Optional(Type.Integer())
}, { description: 'The REST error envelope' })

export const PaginationSchema = Type.Object({
  page: Type.Integer(),
  limit: Type.Integer(),
  total: Type.Integer(),
  totalPages: Type.Integer()
})

export function dataEnvelope<T extends TSchema> (data: T) {
  return Type.Object({ data })
}

export function listEnvelope<T extends TSchema> (item: T) {
  return Type.Object({ data: Type.Array(item), pagination: PaginationSchema })
}

export const NoContent = Type.Null({ description: 'No content' })

/** The refusals every gated route may answer, whatever it does. */
export const GATE_ERRORS = { 401: ErrorEnvelope, 403: ErrorEnvelope, 429: ErrorEnvelope, 503: ErrorEnvelope }

/** The error statuses a route with input may answer besides the gate's. */
export const INPUT_ERRORS = { 400: ErrorEnvelope, 404: ErrorEnvelope, ...GATE_ERRORS }
