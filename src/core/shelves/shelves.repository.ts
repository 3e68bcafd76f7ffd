// All SQL of shelves and their links. Link order is the bytewise order of `position` (the column's
// "C" collation); a link's neighbours are read through the (shelf_id, position) unique index.
import { sql, type Selectable } from 'kysely'
import type { Db } from '../../db/database.js'
import type { ShelfLinksTable, ShelvesTable } from '../../db/schema.js'
import type { PageWindow } from '../pagination.js'

export type ShelfRow = Selectable<ShelvesTable>
export type LinkRow = Selectable<ShelfLinksTable>
export type ShelfWithCount = ShelfRow & { link_count: number }

function withLinkCount (db: Db) {
  return db.selectFrom('shelves')
    .selectAll('shelves')
    .select((eb) => eb.selectFrom('shelf_links').select(sql<number>`count(*)::int`.as('n')).whereRef('shelf_links.shelf_id', '=', 'shelves.id').as('link_count'))
}

export async function findShelf (db: Db, shelfId: string): Promise<ShelfWithCount | undefined> {
  const row = await withLinkCount(db).where('shelves.id', '=', shelfId).executeTakeFirst()
  return row === undefined ? undefined : { ...row, link_count: row.link_count ?? 0 }
}

/** Takes the shelf row's lock for the rest of the transaction, so that writes to one shelf's links
 *  run one at a time (the row itself is not written). */
export async function lockShelf (db: Db, shelfId: string): Promise<ShelfRow | undefined> {
  return await db.selectFrom('shelves').selectAll().where('id', '=', shelfId).forUpdate().executeTakeFirst()
}

export async function countShelvesOf (db: Db, ownerId: string): Promise<number> {
  const { n } = await db.selectFrom('shelves').select(sql<number>`count(*)::int`.as('n')).where('owner_id', '=', ownerId).executeTakeFirstOrThrow()
  return n
}

/** Arbitrary, fixed: keeps these advisory locks apart from any other use of pg_advisory_xact_lock. */
const SHELF_CREATE_LOCK_CLASS = 0x5348 // "SH"

/** Serialises shelf creation per owner until the transaction ends, so a count taken after it stays
 *  true until commit (the 100-shelf bound). Owners whose ids hash alike only wait on each other. */
export async function lockShelfCreation (db: Db, ownerId: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(${SHELF_CREATE_LOCK_CLASS}::int, hashtext(${ownerId}))`.execute(db)
}

/** A user's shelves (only public ones when `onlyPublic`), newest first, with their link counts. */
export async function listShelves (db: Db, ownerId: string, onlyPublic: boolean, window: PageWindow): Promise<{ rows: ShelfWithCount[], total: number }> {
  let base = db.selectFrom('shelves').where('owner_id', '=', ownerId)
  if (onlyPublic) base = base.where('is_public', '=', true).where('hidden_at', 'is', null)
  const { total } = await base.select(sql<number>`count(*)::int`.as('total')).executeTakeFirstOrThrow()
  let query = withLinkCount(db).where('shelves.owner_id', '=', ownerId)
  if (onlyPublic) query = query.where('shelves.is_public', '=', true).where('shelves.hidden_at', 'is', null)
  const rows = await query.orderBy('shelves.created_at', 'desc').orderBy('shelves.id', 'desc').limit(window.limit).offset(window.offset).execute()
  return { rows: rows.map((r) => ({ ...r, link_count: r.link_count ?? 0 })), total }
}

export async function insertShelf (db: Db, shelf: { id: string, ownerId: string, name: string, description: string, isPublic: boolean, now: Date }): Promise<ShelfRow> {
  return await db.insertInto('shelves').values({
    id: shelf.id,
    owner_id: shelf.ownerId,
    name: shelf.name,
    description: shelf.description,
    is_public: shelf.isPublic,
    created_at: shelf.now,
    updated_at: shelf.now
  }).returningAll().executeTakeFirstOrThrow()
}

export async function updateShelfRow (db: Db, id: string, patch: { name?: string, description?: string, isPublic?: boolean }, now: Date): Promise<ShelfRow> {
  return await db.updateTable('shelves')
    .set((eb) => ({
      ...(patch.name === undefined ? {} : { name: patch.name }),
      ...(patch.description === undefined ? {} : { description: patch.description }),
      ...(patch.isPublic === undefined ? {} : { is_public: patch.isPublic }),
      version: eb('version', '+', 1),
      updated_at: now
    }))
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow()
}

export async function deleteShelfRow (db: Db, id: string): Promise<void> {
  await db.deleteFrom('shelves').where('id', '=', id).execute()
}

/** Account deletion, one batch: up to `limit` of the user's shelves, each with its links (at most
 *  500 each); how many went. */
export async function deleteShelvesOwnedByBatch (db: Db, ownerId: string, limit: number): Promise<number> {
  const next = db.selectFrom('shelves').select('id').where('owner_id', '=', ownerId).limit(limit)
  const deleted = await db.deleteFrom('shelves').where('id', 'in', next).executeTakeFirst()
  return Number(deleted.numDeletedRows)
}

/** A shelf's links in order. */
export async function linksOf (db: Db, shelfId: string): Promise<LinkRow[]> {
  return await db.selectFrom('shelf_links').selectAll().where('shelf_id', '=', shelfId).orderBy('position').execute()
}

export async function countLinks (db: Db, shelfId: string): Promise<number> {
  const { n } = await db.selectFrom('shelf_links').select(sql<number>`count(*)::int`.as('n')).where('shelf_id', '=', shelfId).executeTakeFirstOrThrow()
  return n
}

/** A link by id, whichever shelf holds it (the caller compares the shelf). */
export async function findLink (db: Db, linkId: string): Promise<LinkRow | undefined> {
  return await db.selectFrom('shelf_links').selectAll().where('id', '=', linkId).executeTakeFirst()
}

/** The key of the first link after `position` on the shelf (the first of all when `position` is
 *  null), leaving out `exceptId` (the link being moved); null when there is none. */
export async function keyAfter (db: Db, shelfId: string, position: string | null, exceptId: string | null): Promise<string | null> {
  let query = db.selectFrom('shelf_links').select('position').where('shelf_id', '=', shelfId)
  if (position !== null) query = query.where('position', '>', position)
  if (exceptId !== null) query = query.where('id', '<>', exceptId)
  const row = await query.orderBy('position').limit(1).executeTakeFirst()
  return row?.position ?? null
}

/** The key of the shelf's last link, leaving out `exceptId`; null for an empty shelf. */
export async function lastKey (db: Db, shelfId: string, exceptId: string | null): Promise<string | null> {
  let query = db.selectFrom('shelf_links').select('position').where('shelf_id', '=', shelfId)
  if (exceptId !== null) query = query.where('id', '<>', exceptId)
  const row = await query.orderBy('position', 'desc').limit(1).executeTakeFirst()
  return row?.position ?? null
}

export async function insertLink (db: Db, link: { id: string, shelfId: string, url: string, title: string, position: string, now: Date }): Promise<LinkRow> {
  return await db.insertInto('shelf_links').values({
    id: link.id,
    shelf_id: link.shelfId,
    url: link.url,
    title: link.title,
    position: link.position,
    created_at: link.now,
    updated_at: link.now
  }).returningAll().executeTakeFirstOrThrow()
}

/** The one row a move writes. */
export async function setLinkPosition (db: Db, linkId: string, position: string, now: Date): Promise<LinkRow> {
  return await db.updateTable('shelf_links')
    .set((eb) => ({ position, version: eb('version', '+', 1), updated_at: now }))
    .where('id', '=', linkId)
    .returningAll()
    .executeTakeFirstOrThrow()
}

/** Gives the shelf's links new keys in one statement (the unique constraint is checked at its end). */
export async function rekeyLinks (db: Db, shelfId: string, keys: ReadonlyArray<{ id: string, position: string }>, now: Date): Promise<void> {
  if (keys.length === 0) return
  const values = sql.join(keys.map((k) => sql`(${k.id}, ${k.position})`))
  await sql`update shelf_links set position = v.position collate "C", version = version + 1, updated_at = ${now}
    from (values ${values}) as v(id, position)
    where shelf_links.id = v.id and shelf_links.shelf_id = ${shelfId}`.execute(db)
}

export async function deleteLinkRow (db: Db, linkId: string): Promise<void> {
  await db.deleteFrom('shelf_links').where('id', '=', linkId).execute()
}
