import { createHash, randomBytes } from 'node:crypto'

/** Prefixed opaque id: `room_…`, `user_…` (128 random bits). */
export function newId (prefix: string): string {
  return `${prefix}_${randomBytes(16).toString('base64url')}`
}

/** A secret for links and refresh tokens: 256 random bits; only its hash is stored. */
export function newSecretToken (): string {
  return randomBytes(32).toString('base64url')
}

export function hashToken (token: string): string {
  return createHash('sha256').update(token).digest('hex')
}
