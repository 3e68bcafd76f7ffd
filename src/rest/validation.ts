// Fastify validates bodies, queries and params with the core's TypeBox schemas and the core's
// formatter, so REST and RPC report bad fields identically. Bodies are never coerced (a string
// is not a number). Query strings, path params and headers arrive as text: a field the schema
// declares as a number is converted only from plain decimal text, so `limit=2.5` for an integer,
// `0x10`, `1e1` or a repeated parameter are reported as invalid rather than silently reinterpreted.
import type { FastifySchemaCompiler } from 'fastify'
import type { TSchema } from 'typebox'
import { checkInput, invalidInput } from '../core/validation.js'

const INTEGER_TEXT = /^-?\d{1,15}$/
const NUMBER_TEXT = /^-?(\d+(\.\d+)?|\.\d+)$/

function fromText (schema: TSchema, value: unknown): unknown {
  if (typeof value !== 'string') return value
  const type = (schema as { type?: unknown }).type
  if (type === 'integer' && INTEGER_TEXT.test(value)) return Number(value)
  if (type === 'number' && NUMBER_TEXT.test(value)) return Number(value)
  if (type === 'boolean' && (value === 'true' || value === 'false')) return value === 'true'
  return value
}

/** Converts each declared field of a query/params/headers object from its text form. */
export function convertText (schema: TSchema, value: unknown): unknown {
  const properties = (schema as { properties?: Record<string, TSchema> }).properties
  if (properties === undefined || typeof value !== 'object' || value === null) return value
  const converted: Record<string, unknown> = { ...(value as Record<string, unknown>) }
  for (const [name, field] of Object.entries(properties)) {
    if (name in converted) converted[name] = fromText(field, converted[name])
  }
  return converted
}

export const typeBoxValidatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  return (value: unknown) => {
    const candidate = httpPart === 'body' ? value : convertText(schema, value)
    const violations = checkInput(schema, candidate)
    if (violations.length > 0) {
      const error = invalidInput(violations)
      return { error }
    }
    return { value: candidate }
  }
}
