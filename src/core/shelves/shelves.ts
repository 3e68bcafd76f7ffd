// Shelf operations (DECISIONS §10): a user's lists of links, in the order they choose.
//
// Order: each link has a fractional key (ordering.ts) and a shelf's links sort by it, so adding or
// moving a link writes that one row. Every write to a shelf's links first locks the shelf row (not
// written) until its transaction ends: concurrent moves in one shelf then run one after another,
// each reading neighbours the previous one left, so no two get the same key and none is lost. A
// lock rather than retrying on the unique (shelf, position) constraint: 20 clients dragging in one
// shelf at once would retry each other out many times over, while the lock costs each at most a
// wait of a few statements; it also keeps the 500-link count true until commit. The constraint
// stays as the database's own guarantee.
//
// Events go to the owner's streams only (private or public alike: others reading a public shelf
// refetch it). They stay small whatever the shelf holds: `shelf:updated` carries the shelf's own
// fields and, for a move, the moved link's new `{ id, position, version }` in `moved` — never the
// links themselves (a 500-link shelf of long URLs would be a megabyte per drag in the event log).
import type { Actor } from '../actor.js'
import type { CoreDeps } from '../deps.js'
import { AppError, forbidden, notFound, validationError } from '../errors.js'
import { pageWindow, paginationOf, type Page } from '../pagination.js'
import { inTransaction, type Transaction } from '../transaction.js'
import { keyed, ONE_TRANSACTION } from '../idempotency/keyed-call.js'
import { parseInput } from '../validation.js'
import { newId } from '../../infra/ids.js'
import { checkedLinkUrl } from './link-url.js'
import { KEY_MAX_LENGTH, evenKeys, keyBetween } from './ordering.js'
import * as repo from './shelves.repository.js'
import {
  AddLinkInput, CreateShelfInput, LINKS_PER_SHELF_MAX, LinkParams, ListShelvesQuery, MoveLinkInput, SHELVES_PER_USER_MAX, ShelfIdParams, UpdateShelfInput,
  toLink, toShelfSummary, type Link, type Shelf, type ShelfSummary
} from './shelves.types.js'

/** A link's place after a move, as `shelf:updated` carries it. */
export interface LinkPlace { id: string, position: string, version: number }

const SHELF_LIMIT_MESSAGE = `A user keeps at most ${SHELVES_PER_USER_MAX} shelves; delete one before creating another.`
const LINK_LIMIT_MESSAGE = `A shelf holds at most ${LINKS_PER_SHELF_MAX} links; remove one before adding another.`

function ownersOnly (ownerId: string): { audience: { kind: 'users', userIds: string[] }, userId: string } {
  return { audience: { kind: 'users', userIds: [ownerId] }, userId: ownerId }
}

/** Private shelves exist only for their owner, and so do hidden ones (a moderation action,
 *  DECISIONS §11); a public one may be read by anyone signed in. */
export function readable<T extends { owner_id: string, is_public: boolean, hidden_at: Date | null }> (row: T | undefined, actor: Actor): T {
  if (row === undefined || (row.owner_id !== actor.userId && (!row.is_public || row.hidden_at !== null))) throw notFound('Shelf')
  return row
}

/** Only the owner changes a shelf; others see a private one not at all, a public one as read-only. */
function writable<T extends { owner_id: string, is_public: boolean, hidden_at: Date | null }> (row: T | undefined, actor: Actor): T {
  const shelf = readable(row, actor)
  if (shelf.owner_id !== actor.userId) throw forbidden('Only the owner of a shelf may change it.')
  return shelf
}

/** Where a link goes: after `afterLinkId` (absent: at the start when moving, at the end when
 *  adding), between that link and the next one other than `movingId`. */
interface Place { before: string | null, after: string | null }

async function placeFor (trx: Transaction['trx'], shelfId: string, afterLinkId: string | undefined, movingId: string | null, atEnd: boolean): Promise<Place> {
  if (afterLinkId === undefined) {
    return atEnd
      ? { before: await repo.lastKey(trx, shelfId, movingId), after: null }
      : { before: null, after: await repo.keyAfter(trx, shelfId, null, movingId) }
  }
  if (afterLinkId === movingId) throw validationError('afterLinkId', 'must be another link than the one moved')
  const anchor = await repo.findLink(trx, afterLinkId)
  if (anchor?.shelf_id !== shelfId) throw validationError('afterLinkId', 'must be the id of a link on this shelf')
  return { before: anchor.position, after: await repo.keyAfter(trx, shelfId, anchor.position, movingId) }
}

/** New even keys for the shelf with `linkId` (moved or new) at `place`; the caller writes them. */
async function rekeyed (trx: Transaction['trx'], shelfId: string, linkId: string, place: Place): Promise<Array<{ id: string, position: string }>> {
  const others = (await repo.linksOf(trx, shelfId)).filter((l) => l.id !== linkId)
  const index = place.before === null ? 0 : others.findIndex((l) => l.position === place.before) + 1
  const order = [...others.slice(0, index).map((l) => l.id), linkId, ...others.slice(index).map((l) => l.id)]
  const keys = evenKeys(order.length)
  return order.map((id, i) => ({ id, position: keys[i] ?? '' }))
}

export function createShelves (deps: CoreDeps) {
  const { db, clock } = deps

  async function summaryOf (trx: Transaction['trx'], row: repo.ShelfRow): Promise<ShelfSummary> {
    return toShelfSummary(row, await repo.countLinks(trx, row.id))
  }

  return {
    /** The caller's shelves, or with `userId` another user's public ones; newest first, without links. */
    async list (actor: Actor, input: unknown): Promise<Page<ShelfSummary>> {
      const query = parseInput(ListShelvesQuery, input)
      const window = pageWindow(query)
      const ownerId = query.userId ?? actor.userId
      const { rows, total } = await repo.listShelves(db, ownerId, ownerId !== actor.userId, window)
      return { items: rows.map((r) => toShelfSummary(r, r.link_count)), pagination: paginationOf(window, total) }
    },

    async get (actor: Actor, input: unknown): Promise<Shelf> {
      const { shelfId } = parseInput(ShelfIdParams, input)
      const row = readable(await repo.findShelf(db, shelfId), actor)
      const links = (await repo.linksOf(db, shelfId)).map(toLink)
      return { ...toShelfSummary(row, links.length), links }
    },

    create: keyed(deps, async (actor: Actor, input: unknown): Promise<Shelf> => {
      const { name, description, isPublic } = parseInput(CreateShelfInput, input)
      return await inTransaction(deps, async ({ trx, publish }) => {
        await repo.lockShelfCreation(trx, actor.userId)
        if (await repo.countShelvesOf(trx, actor.userId) >= SHELVES_PER_USER_MAX) throw new AppError('limit_reached', SHELF_LIMIT_MESSAGE)
        const row = await repo.insertShelf(trx, { id: newId('shelf'), ownerId: actor.userId, name, description: description ?? '', isPublic: isPublic ?? false, now: clock.now() })
        const shelf: Shelf = { ...toShelfSummary(row, 0), links: [] }
        publish('shelf:created', shelf, ownersOnly(actor.userId))
        return shelf
      })
    }, ONE_TRANSACTION),

    /** Name, description, visibility; answers the shelf with its links. */
    async update (actor: Actor, input: unknown): Promise<Shelf> {
      const { shelfId, name, description, isPublic } = parseInput(UpdateShelfInput, input)
      if (name === undefined && description === undefined && isPublic === undefined) {
        throw validationError('(body)', 'must contain at least one of name, description, isPublic')
      }
      return await inTransaction(deps, async ({ trx, publish }) => {
        writable(await repo.lockShelf(trx, shelfId), actor)
        const row = await repo.updateShelfRow(trx, shelfId, { name, description, isPublic }, clock.now())
        const links = (await repo.linksOf(trx, shelfId)).map(toLink)
        const summary = toShelfSummary(row, links.length)
        publish('shelf:updated', summary, ownersOnly(actor.userId))
        return { ...summary, links }
      })
    },

    /** The shelf and its links. */
    async delete (actor: Actor, input: unknown): Promise<void> {
      const { shelfId } = parseInput(ShelfIdParams, input)
      await inTransaction(deps, async ({ trx, publish }) => {
        writable(await repo.lockShelf(trx, shelfId), actor)
        await repo.deleteShelfRow(trx, shelfId)
        publish('shelf:deleted', { id: shelfId }, ownersOnly(actor.userId))
      })
    },

    /** Adds a link after `afterLinkId`, or last. The 501st is refused. */
    addLink: keyed(deps, async (actor: Actor, input: unknown): Promise<Link> => {
      const parsed = parseInput(AddLinkInput, input)
      const url = checkedLinkUrl(parsed.url)
      return await inTransaction(deps, async ({ trx, publish }) => {
        const { id: shelfId } = writable(await repo.lockShelf(trx, parsed.shelfId), actor)
        if (await repo.countLinks(trx, shelfId) >= LINKS_PER_SHELF_MAX) throw new AppError('limit_reached', LINK_LIMIT_MESSAGE)
        const id = newId('link')
        const place = await placeFor(trx, shelfId, parsed.afterLinkId, null, true)
        let position = keyBetween(place.before, place.after)
        const now = clock.now()
        if (position.length > KEY_MAX_LENGTH) {
          const keys = await rekeyed(trx, shelfId, id, place)
          await repo.rekeyLinks(trx, shelfId, keys.filter((k) => k.id !== id), now)
          position = keys.find((k) => k.id === id)?.position ?? position
        }
        const link = toLink(await repo.insertLink(trx, { id, shelfId, url, title: parsed.title ?? '', position, now }))
        publish('shelf:link-added', { shelfId, link }, ownersOnly(actor.userId))
        return link
      })
    }, ONE_TRANSACTION),

    async removeLink (actor: Actor, input: unknown): Promise<void> {
      const { shelfId, linkId } = parseInput(LinkParams, input)
      await inTransaction(deps, async ({ trx, publish }) => {
        writable(await repo.lockShelf(trx, shelfId), actor)
        const link = await repo.findLink(trx, linkId)
        if (link?.shelf_id !== shelfId) throw notFound('Link')
        await repo.deleteLinkRow(trx, linkId)
        publish('shelf:link-removed', { shelfId, linkId }, ownersOnly(actor.userId))
      })
    },

    /**
     * Moves a link to just after `afterLinkId` (absent: first). Writes the moved link's row alone
     * (its key and version), except in the rare case where the keys around that place have grown
     * past KEY_MAX_LENGTH: then every link of the shelf gets a new, short key. A link already in
     * that place is left as it is (nothing written, no event).
     */
    async moveLink (actor: Actor, input: unknown): Promise<Link> {
      const { shelfId, linkId, afterLinkId } = parseInput(MoveLinkInput, input)
      return await inTransaction(deps, async ({ trx, publish }) => {
        const shelf = writable(await repo.lockShelf(trx, shelfId), actor)
        const current = await repo.findLink(trx, linkId)
        if (current?.shelf_id !== shelfId) throw notFound('Link')
        const place = await placeFor(trx, shelfId, afterLinkId, linkId, false)
        const inPlace = (place.before === null || current.position > place.before) && (place.after === null || current.position < place.after)
        if (inPlace) return toLink(current)
        const now = clock.now()
        const position = keyBetween(place.before, place.after)
        let moved: LinkPlace[]
        let link: Link
        if (position.length <= KEY_MAX_LENGTH) {
          link = toLink(await repo.setLinkPosition(trx, linkId, position, now))
          moved = [{ id: link.id, position: link.position, version: link.version }]
        } else {
          await repo.rekeyLinks(trx, shelfId, await rekeyed(trx, shelfId, linkId, place), now)
          const links = await repo.linksOf(trx, shelfId)
          moved = links.map((l) => ({ id: l.id, position: l.position, version: l.version }))
          const row = links.find((l) => l.id === linkId)
          if (row === undefined) throw notFound('Link')
          link = toLink(row)
        }
        publish('shelf:updated', { ...await summaryOf(trx, shelf), moved }, ownersOnly(actor.userId))
        return link
      })
    }
  }
}

export type Shelves = ReturnType<typeof createShelves>
