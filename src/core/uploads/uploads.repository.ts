// All SQL of uploads.
import type { Db } from '../../db/database.js'
import type { UploadKind } from '../../db/schema.js'
import type { UploadRow } from './uploads.types.js'

export async function insertUpload (db: Db, upload: { id: string, ownerId: string, kind: UploadKind, filename: string, size: number, mimeType: string, storageKey: string, now: Date }): Promise<UploadRow> {
  return await db.insertInto('uploads').values({
    id: upload.id,
    owner_id: upload.ownerId,
    kind: upload.kind,
    filename: upload.filename,
    size: upload.size,
    mime_type: upload.mimeType,
    storage_key: upload.storageKey,
    created_at: upload.now
  }).returningAll().executeTakeFirstOrThrow()
}

/**
 * One upload by id, whoever owns it; undefined when there is none. With `owner` and/or `kind`, only
 * an upload that matches them (what a profile's avatar must be: the caller's own `avatar`).
 */
export async function findUpload (db: Db, id: string, match: { owner?: string, kind?: UploadKind } = {}): Promise<UploadRow | undefined> {
  let query = db.selectFrom('uploads').selectAll().where('id', '=', id)
  if (match.owner !== undefined) query = query.where('owner_id', '=', match.owner)
  if (match.kind !== undefined) query = query.where('kind', '=', match.kind)
  return await query.executeTakeFirst()
}

/** Deletes the owner's upload; its storage key, or undefined when the owner has no such upload. */
export async function deleteOwnUpload (db: Db, id: string, ownerId: string): Promise<string | undefined> {
  const row = await db.deleteFrom('uploads').where('id', '=', id).where('owner_id', '=', ownerId).returning('storage_key').executeTakeFirst()
  return row?.storage_key
}

/** Deletes every upload of a user (account deletion); their storage keys, for removal after the commit. */
export async function deleteUploadsOwnedBy (db: Db, ownerId: string): Promise<string[]> {
  const rows = await db.deleteFrom('uploads').where('owner_id', '=', ownerId).returning('storage_key').execute()
  return rows.map((row) => row.storage_key)
}
