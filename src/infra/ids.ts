import { createHash, randomBytes } from 'node:crypto'

/** Prefixed opaque id: `room_…`, `user_…` (128 random bits). */
export function newId (prefix: string): string {
  return `${prefix}_${randomBytes(16).toString('base64url')}`
}

/** Whether `value` has the shape of an id `newId(prefix)` makes: the prefix, `_`, base64url; at most 100 characters. */
export function isIdOf (prefix: string, value: string): boolean {
  return value.length <= 100 && value.startsWith(`${prefix}_`) && /^[A-Za-z0-9_-]+$/.test(value.slice(prefix.length + 1))
}

/** A secret for links and refresh tokens: 256 random bits; only its hash is stored. */
export function newSecretToken (): string {
  return randomBytes(32).toString('base64url')
}

export function hashToken (token: string): string {
  return createHash('sha256').update(token).digest('hex')
}
