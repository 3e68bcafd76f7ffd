// The Uploaded file resource (SPEC Resources: Uploaded file) and the rules of uploads (DECISIONS §9):
// kinds, size limits, which types each kind accepts and which are shown inline when served.
import type { Selectable } from 'kysely'
import { Type } from 'typebox'
import type { UploadKind, UploadsTable } from '../../db/schema.js'

export type { UploadKind }

export const UPLOAD_KINDS: readonly UploadKind[] = ['avatar', 'attachment']

const MiB = 1024 * 1024
/** Largest file of each kind, in bytes; one byte more is 413 `PayloadTooLarge` and nothing is kept. */
export const UPLOAD_LIMITS: Readonly<Record<UploadKind, number>> = { avatar: 5 * MiB, attachment: 25 * MiB }
export const MAX_UPLOAD_BYTES = Math.max(...Object.values(UPLOAD_LIMITS))

/** An avatar must be one of these by its bytes, whatever name or type the client claims
 *  (APNG is a PNG that file-type names apart). */
export const AVATAR_TYPES: ReadonlySet<string> = new Set(['image/png', 'image/apng', 'image/jpeg', 'image/webp', 'image/gif'])

/** The type of a file whose bytes match no known format — plain text among them. It is served as
 *  a download: a browser never renders or runs it, whatever it holds. */
export const UNKNOWN_TYPE = 'application/octet-stream'

/** Raster images a browser shows: served inline. Everything else is served as a download
 *  (`Content-Disposition: attachment`), SVG and XML included, since they can carry script. */
const INLINE_TYPES: ReadonlySet<string> = new Set([...AVATAR_TYPES, 'image/avif'])

export function servedInline (mimeType: string): boolean {
  return INLINE_TYPES.has(mimeType)
}

export interface UploadedFile {
  id: string
  /** `${APP_URL}/api/uploads/<id>` (DECISIONS §5). */
  url: string
  filename: string
  size: number
  mimeType: string
  kind: UploadKind
  createdAt: string
}

export type UploadRow = Selectable<UploadsTable>

export const FileId = Type.String({ minLength: 1, maxLength: 200, errorMessage: 'must be a non-empty file id' })
export const FileIdParams = Type.Object({ fileId: FileId })
export const UploadKindValue = Type.Union(UPLOAD_KINDS.map((kind) => Type.Literal(kind)), { errorMessage: `must be one of: ${UPLOAD_KINDS.join(', ')}` })

const UPLOADS_PATH = '/api/uploads/'

export function uploadUrl (appUrl: string, id: string): string {
  return `${appUrl}${UPLOADS_PATH}${id}`
}

/** The upload id an upload URL of this service names, or undefined for any other URL (for a
 *  profile's `avatarUrl`, which may only point at an upload of this service). */
export function uploadIdOfUrl (appUrl: string, url: string): string | undefined {
  const prefix = `${appUrl}${UPLOADS_PATH}`
  if (!url.startsWith(prefix)) return undefined
  const id = url.slice(prefix.length)
  return /^file_[A-Za-z0-9_-]{1,100}$/.test(id) ? id : undefined
}

export function toUploadedFile (row: UploadRow, appUrl: string): UploadedFile {
  return {
    id: row.id,
    url: uploadUrl(appUrl, row.id),
    filename: row.filename,
    size: row.size,
    mimeType: row.mime_type,
    kind: row.kind,
    createdAt: row.created_at.toISOString()
  }
}
