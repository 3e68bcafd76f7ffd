// Users (DECISIONS §9): one's own profile and its changes, other people's display info, search.
// An e-mail address is shown only to its owner and found only by exact match, never by prefix.
import type { Actor } from '../actor.js'
import type { CoreDeps } from '../deps.js'
import { notFound, validationError } from '../errors.js'
import { pageWindow, paginationOf, type Page } from '../pagination.js'
import { inTransaction } from '../transaction.js'
import { removeStoredFiles } from '../uploads/uploads.js'
import { deleteOwnUpload, subtractUploadBytes } from '../uploads/uploads.repository.js'
import { uploadIdOfUrl } from '../uploads/uploads.types.js'
import { parseInput } from '../validation.js'
import { normaliseDisplayName } from './display-name.js'
import { searchKeyOf } from './search-key.js'
import * as repo from './users.repository.js'
import {
  DISPLAY_INFO_MAX_IDS, DisplayInfoQuery, GetDisplayInfoInput, GetUserInput, SEARCH_MAX_MATCHES, SEARCH_MIN_CHARS, SearchUsersQuery, UpdateProfileInput,
  toPublicUser, toUser, type PublicUser, type User
} from './users.types.js'

/** What a query's length is counted in: characters that show (the search key drops the rest). */
const UNSEEN = /[\p{Default_Ignorable_Code_Point}\p{White_Space}]/gu

export interface UsersOptions {
  /** Called after a profile change commits, so cached copies of the user go on every instance. */
  userChanged (userId: string): Promise<void>
  /** Whether `url` names an avatar upload of this service that `userId` may show as theirs. */
  isOwnAvatarUpload (userId: string, url: string): Promise<boolean>
}

export function createUsers (deps: CoreDeps, options: UsersOptions) {
  const { db, clock } = deps

  async function avatarUrlOf (actor: Actor, raw: string): Promise<string | null> {
    const url = raw.trim()
    if (url === '') return null
    if (!await options.isOwnAvatarUpload(actor.userId, url)) {
      throw validationError('avatarUrl', 'must be the URL of an avatar you uploaded to this service (POST /api/users/avatar), or empty to clear')
    }
    return url
  }

  async function displayInfoOf (userIds: readonly string[]): Promise<PublicUser[]> {
    const unique = [...new Set(userIds)]
    const byId = new Map((await repo.findPublicUsersByIds(db, unique)).map((row) => [row.id, toPublicUser(row)]))
    return unique.flatMap((id) => byId.get(id) ?? [])
  }

  return {
    /** Anyone signed in sees a user's display info; the e-mail address only on their own. */
    async get (actor: Actor, input: unknown): Promise<User | PublicUser> {
      const { userId } = parseInput(GetUserInput, input)
      const row = await repo.findUserById(db, userId)
      if (row === undefined) throw notFound('User')
      return row.id === actor.userId ? toUser(row) : toPublicUser(row)
    },

    /**
     * Changes the caller's own profile; unset fields stay. Answers the whole User. An avatar replaced
     * or cleared is deleted (DECISIONS §16: its URL then answers 404): the profile row is locked
     * while the old URL is read, so of two changes at once each deletes the avatar it replaced; the
     * bytes go after the commit.
     */
    async updateProfile (actor: Actor, input: unknown): Promise<User> {
      const change = parseInput(UpdateProfileInput, input)
      const displayName = change.displayName === undefined ? undefined : normaliseDisplayName(change.displayName)
      const avatarUrl = change.avatarUrl === undefined ? undefined : await avatarUrlOf(actor, change.avatarUrl)
      const { row, replacedKey } = await inTransaction(deps, async ({ trx }) => {
        const before = avatarUrl === undefined ? undefined : await repo.lockUserRow(trx, actor.userId)
        const row = await repo.updateProfile(trx, actor.userId, { displayName, avatarUrl }, clock.now())
        if (row === undefined) throw notFound('User')
        const oldId = before?.avatar_url === null || before?.avatar_url === undefined || before.avatar_url === avatarUrl ? undefined : uploadIdOfUrl(deps.config.appUrl, before.avatar_url)
        const replaced = oldId === undefined ? undefined : await deleteOwnUpload(trx, oldId, actor.userId, 'avatar')
        if (replaced !== undefined) await subtractUploadBytes(trx, actor.userId, replaced.size)
        return { row, replacedKey: replaced?.storage_key }
      })
      if (replacedKey !== undefined) await removeStoredFiles(deps, [replacedKey])
      await options.userChanged(actor.userId)
      return toUser(row)
    },

    /** Display names starting with the query (case-insensitive, any script), and — for a query
     *  with `@` — first the one user whose address it is exactly. */
    async search (_actor: Actor, input: unknown): Promise<Page<PublicUser>> {
      const query = parseInput(SearchUsersQuery, input)
      const text = query.q.normalize('NFC').trim()
      if ([...text.replace(UNSEEN, '')].length < SEARCH_MIN_CHARS) throw validationError('q', `must be at least ${SEARCH_MIN_CHARS} characters`)
      const window = pageWindow(query)
      // An address is matched whole: a prefix would let anyone enumerate addresses letter by letter.
      const addressee = text.includes('@') ? await repo.findPublicUserByEmail(db, text.toLowerCase()) : undefined
      if (addressee === undefined) {
        const { rows, total } = await repo.searchByNamePrefix(db, searchKeyOf(text), window, SEARCH_MAX_MATCHES)
        return { items: rows.map(toPublicUser), pagination: paginationOf(window, total) }
      }
      // The addressee is the first match; the names follow, without them, one place later.
      const names = { offset: Math.max(0, window.offset - 1), limit: window.offset === 0 ? window.limit - 1 : window.limit }
      const { rows, total } = await repo.searchByNamePrefix(db, searchKeyOf(text), names, SEARCH_MAX_MATCHES, addressee.id)
      return { items: [...(window.offset === 0 ? [addressee] : []), ...rows].map(toPublicUser), pagination: paginationOf(window, 1 + total) }
    },

    /** Display info of up to 100 users, in the order asked; unknown ids are left out. */
    async displayInfo (_actor: Actor, input: unknown): Promise<PublicUser[]> {
      const { userIds } = parseInput(GetDisplayInfoInput, input)
      return await displayInfoOf(userIds)
    },

    /** The same for REST, whose ids come as one comma-separated parameter (`ids`), by the same rules. */
    async displayInfoOfList (_actor: Actor, input: unknown): Promise<PublicUser[]> {
      const { ids } = parseInput(DisplayInfoQuery, input)
      const userIds = ids === '' ? [] : ids.split(',')
      if (userIds.length > DISPLAY_INFO_MAX_IDS) throw validationError('ids', `must be a comma-separated list of at most ${DISPLAY_INFO_MAX_IDS} user ids`)
      if (userIds.some((id) => id.length < 1 || id.length > 200)) throw validationError('ids', 'must be user ids of 1 to 200 characters, separated by commas')
      return await displayInfoOf(userIds)
    }
  }
}
