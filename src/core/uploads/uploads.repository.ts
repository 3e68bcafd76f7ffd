// All SQL of uploads.
import { sql } from 'kysely'
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

/** Deletes the owner's upload (only one of `kind`, when given); what it was, or undefined when the
 *  owner has no such upload. */
export async function deleteOwnUpload (db: Db, id: string, ownerId: string, kind?: UploadKind): Promise<Pick<UploadRow, 'storage_key' | 'size' | 'kind'> | undefined> {
  let query = db.deleteFrom('uploads').where('id', '=', id).where('owner_id', '=', ownerId)
  if (kind !== undefined) query = query.where('kind', '=', kind)
  return await query.returning(['storage_key', 'size', 'kind']).executeTakeFirst()
}

/** Account deletion, one batch: up to `limit` of the user's uploads; their storage keys, for removal
 *  after the commit. */
export async function deleteUploadsOwnedByBatch (db: Db, ownerId: string, limit: number): Promise<string[]> {
  const next = db.selectFrom('uploads').select('id').where('owner_id', '=', ownerId).limit(limit)
  const rows = await db.deleteFrom('uploads').where('id', 'in', next).returning('storage_key').execute()
  return rows.map((row) => row.storage_key)
}

/**
 * Adds `size` to what the user's uploads weigh, if that stays within `quota` (DECISIONS §16). One
 * conditional update of the user's row: parallel uploads queue on that row lock, each sees the
 * others' committed sizes, so two uploads near the quota cannot both pass. `missing` when the user
 * is gone (the account was deleted while the file arrived).
 */
export async function addUploadBytes (db: Db, userId: string, size: number, quota: number): Promise<'added' | 'over_quota' | 'missing'> {
  const updated = await db.updateTable('users')
    .set({ upload_bytes: sql<string>`upload_bytes + ${size}` })
    .where('id', '=', userId)
    .where(sql<boolean>`upload_bytes + ${size} <= ${quota}`)
    .returning('id')
    .executeTakeFirst()
  if (updated !== undefined) return 'added'
  return await db.selectFrom('users').select('id').where('id', '=', userId).executeTakeFirst() === undefined ? 'missing' : 'over_quota'
}

/** Takes a removed upload's size off what the user's uploads weigh. */
export async function subtractUploadBytes (db: Db, userId: string, size: number): Promise<void> {
  await db.updateTable('users').set({ upload_bytes: sql<string>`greatest(upload_bytes - ${size}, 0)` }).where('id', '=', userId).execute()
}

/** What the user's uploads weigh now (0 for a user that is gone). */
export async function uploadBytesOf (db: Db, userId: string): Promise<number> {
  const row = await db.selectFrom('users').select(sql<number>`upload_bytes::float8`.as('bytes')).where('id', '=', userId).executeTakeFirst()
  return row?.bytes ?? 0
}

/** Clears the owner's profile avatar if it shows this URL; whether it did. */
export async function clearAvatarShowing (db: Db, userId: string, url: string, now: Date): Promise<boolean> {
  const row = await db.updateTable('users').set({ avatar_url: null, updated_at: now }).where('id', '=', userId).where('avatar_url', '=', url).returning('id').executeTakeFirst()
  return row !== undefined
}

/** Of these storage keys, the ones an upload row refers to (the sweep leaves those alone). */
export async function keysInUse (db: Db, keys: readonly string[]): Promise<Set<string>> {
  if (keys.length === 0) return new Set()
  const rows = await db.selectFrom('uploads').select('storage_key').where(sql<boolean>`storage_key = any(${[...keys]}::text[])`).execute()
  return new Set(rows.map((row) => row.storage_key))
}
