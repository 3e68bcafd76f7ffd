// Input validation for both transports: the core validates every operation's input against its
// TypeBox schema, and REST uses the same schemas (and this formatter) for bodies and queries, so
// a bad field reads the same over REST and RPC.
import type { Static, TSchema } from 'typebox'
import { Compile, type Validator } from 'typebox/compile'
import { AppError, type FieldViolation } from './errors.js'
import { MAX_JSON_DEPTH, nestsDeeperThan } from './json-depth.js'

/** Custom message for a property: put `errorMessage` on its schema. */
interface WithMessage { errorMessage?: string, properties?: Record<string, TSchema>, items?: TSchema }

/**
 * What the size check reads of a schema. `maxDepth` is ours, on the schemas of free-form JSON fields
 * (DECISIONS §17): JSON Schema has no depth keyword, and validators ignore unknown ones.
 */
interface SizedSchema extends WithMessage { maxLength?: number, maxItems?: number, maxDepth?: number }

interface TypeBoxError {
  keyword: string
  instancePath: string
  params: Record<string, unknown>
  message: string
}

const compiled = new WeakMap<TSchema, Validator>()

function validatorFor (schema: TSchema): Validator {
  let validator = compiled.get(schema)
  if (validator === undefined) {
    validator = Compile(schema)
    compiled.set(schema, validator)
  }
  return validator
}

/** `/updates/0/x` → `updates[0].x` */
function fieldName (segments: readonly string[]): string {
  return segments.reduce((name, s) => /^\d+$/.test(s) ? `${name}[${s}]` : name === '' ? s : `${name}.${s}`, '')
}

function schemaAt (schema: TSchema, segments: readonly string[]): WithMessage | undefined {
  let current: WithMessage | undefined = schema as WithMessage
  for (const s of segments) {
    if (current === undefined) return undefined
    current = /^\d+$/.test(s) ? current.items as WithMessage | undefined : current.properties?.[s] as WithMessage | undefined
  }
  return current
}

function describe (schema: TSchema, segments: readonly string[], error: TypeBoxError): string {
  const custom = schemaAt(schema, segments)?.errorMessage
  if (custom !== undefined) return custom
  switch (error.keyword) {
    case 'type': return `must be ${String(error.params.type)}`
    case 'minLength': return `must be at least ${String(error.params.limit)} characters`
    case 'maxLength': return `must be at most ${String(error.params.limit)} characters`
    case 'minimum': return `must be at least ${String(error.params.limit)}`
    case 'maximum': return `must be at most ${String(error.params.limit)}`
    case 'maxItems': return `must have at most ${String(error.params.limit)} items`
    case 'minItems': return `must have at least ${String(error.params.limit)} items`
    default: return error.message
  }
}

export function violationsOf (schema: TSchema, errors: readonly TypeBoxError[]): FieldViolation[] {
  const violations: FieldViolation[] = []
  const seen = new Set<string>()
  const add = (field: string, description: string): void => {
    if (seen.has(field)) return // one violation per field: the first is the most specific
    seen.add(field)
    violations.push({ field, description })
  }
  for (const error of errors) {
    const segments = error.instancePath.split('/').slice(1)
    if (error.keyword === 'required') {
      for (const name of error.params.requiredProperties as string[]) {
        add(fieldName([...segments, name]), 'is required')
      }
    } else if (error.keyword === 'additionalProperties') {
      for (const name of error.params.additionalProperties as string[]) {
        add(fieldName([...segments, name]), 'is not allowed')
      }
    } else if (error.keyword === 'boolean' && error.message === 'schema is false') {
      // An unknown property (`additionalProperties: false`), reported one by one.
      add(fieldName(segments), 'is not allowed')
    } else {
      add(segments.length === 0 ? '(body)' : fieldName(segments), describe(schema, segments, error))
    }
  }
  return violations
}

/** Past this depth an input is refused whatever its schema allows: a free-form field is refused at
 *  its own `maxDepth` first, so only a schema that lets unknown properties through gets here. */
const INPUT_MAX_DEPTH = 2 * MAX_JSON_DEPTH

/**
 * Postgres text cannot hold U+0000: refused up front, in every string of every input. Walked with an
 * explicit stack (children pushed in reverse, so violations come in document order), never by
 * recursion, and the depth is bounded here too, so nothing after validation (fingerprints, JSON
 * text for the database) walks a value deeper than INPUT_MAX_DEPTH.
 */
function contentViolations (value: unknown): FieldViolation[] {
  const found: FieldViolation[] = []
  const field = (path: string[]): string => path.length === 0 ? '(body)' : fieldName(path)
  const pending: Array<{ value: unknown, path: string[] }> = [{ value, path: [] }]
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { value: item, path } = next
    if (typeof item === 'string') {
      if (item.includes('\u0000')) found.push({ field: field(path), description: 'must not contain NUL characters' })
    } else if (item !== null && typeof item === 'object') {
      if (path.length >= INPUT_MAX_DEPTH) {
        found.push({ field: field(path), description: `must nest at most ${INPUT_MAX_DEPTH} levels of objects and arrays` })
        continue
      }
      const entries = Array.isArray(item) ? item.map((child, i) => [String(i), child] as const) : Object.entries(item)
      for (let i = entries.length - 1; i >= 0; i--) pending.push({ value: entries[i]![1], path: [...path, entries[i]![0]] })
    }
  }
  return found
}

/**
 * Strings longer than their schema's `maxLength`, arrays longer than its `maxItems` and free-form
 * values deeper than its `maxDepth`, found before the validator (or any recursive walk) runs. TypeBox evaluates every keyword of a refused
 * value when it lists the errors, patterns included, so without this a megabyte-long string would be
 * pattern-matched in full before being refused for its length.
 */
function sizeViolations (schema: SizedSchema, value: unknown, path: string[], found: FieldViolation[]): FieldViolation[] {
  const field = (): string => path.length === 0 ? '(body)' : fieldName(path)
  if (schema.maxDepth !== undefined && nestsDeeperThan(value, schema.maxDepth)) {
    found.push({ field: field(), description: `must nest at most ${schema.maxDepth} levels of objects and arrays` })
  } else if (typeof value === 'string') {
    if (schema.maxLength !== undefined && value.length > schema.maxLength) {
      found.push({ field: field(), description: schema.errorMessage ?? `must be at most ${schema.maxLength} characters` })
    }
  } else if (Array.isArray(value)) {
    if (schema.maxItems !== undefined && value.length > schema.maxItems) {
      found.push({ field: field(), description: schema.errorMessage ?? `must have at most ${schema.maxItems} items` })
    } else if (schema.items !== undefined) {
      value.forEach((item, i) => { sizeViolations(schema.items as SizedSchema, item, [...path, String(i)], found) })
    }
  } else if (value !== null && typeof value === 'object' && schema.properties !== undefined) {
    for (const [name, property] of Object.entries(schema.properties)) {
      if (Object.hasOwn(value, name)) sizeViolations(property as SizedSchema, (value as Record<string, unknown>)[name], [...path, name], found)
    }
  }
  return found
}

export function checkInput<T extends TSchema> (schema: T, value: unknown): FieldViolation[] {
  const oversized = sizeViolations(schema as SizedSchema, value, [], [])
  if (oversized.length > 0) return oversized
  const validator = validatorFor(schema)
  if (validator.Check(value)) return contentViolations(value)
  const violations = violationsOf(schema, validator.Errors(value) as unknown as TypeBoxError[])
  // TypeBox reports a bounded number of errors; a refused value always names at least one field.
  return violations.length > 0 ? violations : [{ field: '(body)', description: 'is invalid' }]
}

export function invalidInput (violations: readonly FieldViolation[]): AppError {
  // A description written as a whole sentence ("Room name must be …") reads best on its own.
  const summary = violations.map((v) => /^[A-Z]/.test(v.description) ? v.description : `${v.field} ${v.description}`).join('; ')
  return new AppError('validation', `Invalid input: ${summary}`, violations)
}

/** Past this depth a value is passed on as it is (validation refuses it next). */
const UNDEFINED_STRIP_DEPTH = INPUT_MAX_DEPTH

/**
 * RPC messages carry unset optional fields as `undefined`; like a key missing from JSON, that means
 * absent, so a missing required field reads "is required" on both transports. Messages nest a few
 * levels; the depth bound keeps a deep client value from recursing here before validation sees it.
 */
function withoutUndefined (value: unknown, depth = 0): unknown {
  if (depth > UNDEFINED_STRIP_DEPTH) return value
  if (Array.isArray(value)) return value.map((item) => withoutUndefined(item, depth + 1))
  if (value === null || typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) return value
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined).map(([k, v]) => [k, withoutUndefined(v, depth + 1)]))
}

/** Validates `value` against `schema` and returns it typed, or throws a validation AppError. */
export function parseInput<T extends TSchema> (schema: T, value: unknown): Static<T> {
  const input = withoutUndefined(value)
  const violations = checkInput(schema, input)
  if (violations.length > 0) throw invalidInput(violations)
  return input as Static<T>
}
