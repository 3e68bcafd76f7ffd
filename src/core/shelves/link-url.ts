// The URL rules of a shelf's links (DECISIONS §10): http or https only, at most 2,048 characters, no
// user-info part (`http://user:pass@host` would put a credential on a shelf others may read, and
// `http://trusted.example@evil.example` is a classic disguise). The URL is parsed by the WHATWG
// parser browsers use, and stored as that parser writes it, so what a client opens is what was checked.
import { validationError, type AppError } from '../errors.js'
import { URL_MAX } from './shelves.types.js'

/** The authority of `scheme://authority/...` as written, before any parser tidies it. */
const AUTHORITY = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#\\]*)/

/** The URL as it will be stored, or the reason it is refused (naming `field`). */
export function checkedLinkUrl (raw: string, field = 'url'): string {
  const refuse = (why: string): AppError => validationError(field, why)
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw refuse('must be an absolute http or https URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw refuse(`must be an http or https URL (not ${url.protocol.slice(0, 20)})`)
  if (url.username !== '' || url.password !== '' || (AUTHORITY.exec(raw.trim())?.[1] ?? '').includes('@')) {
    throw refuse('must not contain a user name or password (user-info before "@")')
  }
  if (url.hostname === '') throw refuse('must name a host')
  const stored = url.href
  if (stored.length > URL_MAX) throw refuse(`must be at most ${URL_MAX} characters once normalised`)
  return stored
}
