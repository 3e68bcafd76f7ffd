// Widget settings checked against the widget's JSON Schema (DECISIONS §11) with Ajv, the one JSON
// Schema validator of the service for these (TypeBox validates our own inputs; a widget's schema is
// data an admin wrote). Ajv compiles a schema to a function once; compiled validators are kept per
// schema text, so a busy room's installations do not recompile.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import { AppError, validationError, type FieldViolation } from '../errors.js'
import { WIDGET_JSON_MAX_BYTES } from './safety.types.js'

// strict: a schema with an unknown keyword or a contradiction is refused when the admin writes it,
// not discovered when a room creator's settings fail for no visible reason.
const ajv = new Ajv({ allErrors: true, strict: true })
const compiled = new Map<string, ValidateFunction>()
const MAX_COMPILED = 1000

function validatorFor (schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema)
  let validate = compiled.get(key)
  if (validate === undefined) {
    validate = ajv.compile(schema)
    if (compiled.size >= MAX_COMPILED) compiled.clear()
    compiled.set(key, validate)
  }
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
