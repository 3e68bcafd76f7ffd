// Widget settings checked against the widget's JSON Schema (DECISIONS §11) with Ajv, the one JSON
// Schema validator of the service for these (TypeBox validates our own inputs; a widget's schema is
// data an admin wrote). Ajv compiles a schema to a function once; compiled validators are kept per
// schema text, so a busy room's installations do not recompile.
//
// Each schema is compiled by an Ajv of its own (issue 38 item 6): an Ajv instance keeps a registry
// of every `$id` it has seen, so on a shared one two widgets whose schemas share an `$id` collide
// ("schema with key or id already exists"), one schema could `$ref` another widget's, and evicting a
// validator from our cache left its `$id` registered, so compiling it again failed. A schema's
// instance lives exactly as long as its cached validator: evicting one forgets everything it named.
import { createHash } from 'node:crypto'
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import { AppError, validationError, type FieldViolation } from '../errors.js'
import { WIDGET_JSON_MAX_BYTES } from './safety.types.js'

// strict: a schema with an unknown keyword or a contradiction is refused when the admin writes it,
// not discovered when a room creator's settings fail for no visible reason.
const OPTIONS = { allErrors: true, strict: true } as const
/**
 * Checks schemas against the JSON Schema meta-schema, which it compiles once; it never compiles or
 * registers a widget's schema, so its registry holds the meta-schemas only. The per-schema
 * instances skip that check (compiling the meta-schema in each would cost more than the schema).
 */
const metaSchemaChecker = new Ajv(OPTIONS)

/** Validators kept, least recently used evicted first: a bound on memory whatever the catalogue holds. */
export const WIDGET_VALIDATORS_CACHED = 256
const compiled = new Map<string, ValidateFunction>()

function validatorFor (schema: Record<string, unknown>): ValidateFunction {
  const key = createHash('sha256').update(JSON.stringify(schema)).digest('base64url')
  let validate = compiled.get(key)
  if (validate !== undefined) {
    compiled.delete(key) // re-inserted below: the Map's order is the recency order
  } else {
    if (!metaSchemaChecker.validateSchema(schema)) throw new Error(`schema is invalid: ${metaSchemaChecker.errorsText(metaSchemaChecker.errors)}`)
    validate = new Ajv({ ...OPTIONS, validateSchema: false }).compile(schema)
    if (compiled.size >= WIDGET_VALIDATORS_CACHED) compiled.delete(compiled.keys().next().value as string)
  }
  compiled.set(key, validate)
  return validate
}

function jsonBytes (value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8')
}

/** A settings schema an admin submits: small, and one Ajv compiles; else a validation error on `field`. */
export function checkSettingsSchema (schema: Record<string, unknown>, field = 'settingsSchema'): void {
  if (jsonBytes(schema) > WIDGET_JSON_MAX_BYTES) throw validationError(field, `must be at most ${WIDGET_JSON_MAX_BYTES} bytes of JSON`)
  try {
    validatorFor(schema)
  } catch (error) {
    throw validationError(field, `is not a valid JSON Schema: ${(error as Error).message}`.slice(0, 300))
  }
}

/** `/a/0/b` → `settings.a[0].b` */
function fieldOf (error: ErrorObject): string {
  const segments = error.instancePath.split('/').slice(1).map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'))
  if (error.keyword === 'required') segments.push(String((error.params as { missingProperty: string }).missingProperty))
  if (error.keyword === 'additionalProperties') segments.push(String((error.params as { additionalProperty: string }).additionalProperty))
  return segments.reduce((name, s) => /^\d+$/.test(s) ? `${name}[${s}]` : `${name}.${s}`, 'settings')
}

function describe (error: ErrorObject): string {
  if (error.keyword === 'required') return 'is required'
  if (error.keyword === 'additionalProperties') return 'is not allowed'
  return error.message ?? 'is invalid'
}

/** Settings checked against the widget's schema; violations name each offending field (`settings.color`). */
export function checkSettings (schema: Record<string, unknown>, settings: Record<string, unknown>): void {
  if (jsonBytes(settings) > WIDGET_JSON_MAX_BYTES) throw validationError('settings', `must be at most ${WIDGET_JSON_MAX_BYTES} bytes of JSON`)
  let validate: ValidateFunction
  try {
    validate = validatorFor(schema)
  } catch {
    throw new AppError('precondition', 'This widget\'s settings schema is not usable; an admin must fix it.')
  }
  if (validate(settings)) return
  const violations: FieldViolation[] = []
  const seen = new Set<string>()
  for (const error of validate.errors ?? []) {
    const field = fieldOf(error)
    if (seen.has(field)) continue
    seen.add(field)
    violations.push({ field, description: describe(error) })
  }
  if (violations.length === 0) violations.push({ field: 'settings', description: 'is invalid' })
  throw new AppError('validation', `Invalid input: ${violations.map((v) => `${v.field} ${v.description}`).join('; ')}`, violations)
}
