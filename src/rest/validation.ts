// Fastify validates bodies, queries and params with the core's TypeBox schemas and the core's
// formatter, so REST and RPC report bad fields identically. Bodies are never coerced (a string
// is not a number); query strings and path params are converted first, as they arrive as text.
import type { FastifySchemaCompiler } from 'fastify'
import type { TSchema } from 'typebox'
import { Value } from 'typebox/value'
import { checkInput, invalidInput } from '../core/validation.js'

export const typeBoxValidatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  return (value: unknown) => {
    const candidate = httpPart === 'body' ? value : Value.Convert(schema, value)
    const violations = checkInput(schema, candidate)
    if (violations.length > 0) {
      const error = invalidInput(violations)
      return { error }
    }
    return { value: candidate }
  }
}
