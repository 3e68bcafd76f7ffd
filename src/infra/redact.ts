// Secrets that travel in URLs never reach a log line (DECISIONS §16): magic-link, invite, poll and
// deletion tokens, in query strings (`?token=…`, any parameter whose name ends in "token", however
// it is spelt or percent-encoded) and in path segments (`/api/invites/:token`). Every URL a log
// line carries goes through `redactUrl` (the request serializer of src/app.ts; an access log line
// would too), so one function decides what is secret.

const REDACTED = '[REDACTED]'

/** Query parameters that hold a secret: `token`, `pollToken`, `refresh_token`, …, and `message`,
 *  a Connect GET call's whole request (which may hold any of them). */
const SECRET_PARAM = /token$|^message$/i

/** A path segment that is itself a secret: the invitation token of `/invites/:token` (but `accept`). */
const SECRET_SEGMENT = /(\/invites\/)(?!accept(?:\/|$))[^/]+/gi

function decoded (text: string): string {
  try {
    return decodeURIComponent(text.replaceAll('+', ' '))
  } catch {
    return text
  }
}

function redactPath (path: string): string {
  const plain = decoded(path)
  // A path whose decoded form names a secret is logged decoded, with the secret taken out: matching
  // the raw text alone would miss `/api/%69nvites/…`, which routes the same.
  const redacted = plain.replace(SECRET_SEGMENT, `$1${REDACTED}`)
  return redacted === plain ? path : redacted
}

function redactQuery (query: string): string {
  return query.split('&').map((pair) => {
    const equals = pair.indexOf('=')
    const name = equals < 0 ? pair : pair.slice(0, equals)
    return SECRET_PARAM.test(decoded(name).trim()) ? `${name}=${REDACTED}` : pair
  }).join('&')
}

/** What every URL holding a secret contains (the secrets' names, or an escape that may spell one):
 *  the URLs of nearly every request have none of it and are logged as they are, at once. */
const MAY_HOLD_SECRET = /token|invites|message|%/i

/** A request URL (path and query string) fit for a log line. */
export function redactUrl (url: string): string {
  if (!MAY_HOLD_SECRET.test(url)) return url
  const mark = url.indexOf('?')
  if (mark < 0) return redactPath(url)
  return `${redactPath(url.slice(0, mark))}?${redactQuery(url.slice(mark + 1))}`
}
