// Users (DECISIONS §9): one's own profile and its changes, other people's display info, search.
// An e-mail address is shown only to its owner and found only by exact match, never by prefix.
import type { Actor } from '../actor.js'
import type { CoreDeps } from '../deps.js'
import { notFound, validationError } from '../errors.js'
import { pageWindow, paginationOf, type Page } from '../pagination.js'
import { parseInput } from '../validation.js'
import * as repo from './users.repository.js'
import {
  DISPLAY_NAME_MAX, GetDisplayInfoInput, GetUserInput, SEARCH_MAX_MATCHES, SEARCH_MIN_CHARS, SearchUsersQuery, UpdateProfileInput,
  toPublicUser, toUser, type PublicUser, type User
} from './users.types.js'

/** C0/C1 controls, line and paragraph separators, and the bidirectional marks, embeddings,
 *  overrides and isolates that would let a name reorder the text around it. */
const FORBIDDEN_IN_NAME = /[\p{Cc}\u061C\u200E\u200F\u2028\u2029\u202A-\u202E\u2066-\u2069]/u

/** A display name as stored: NFC, trimmed, 1–64 characters (code points), nothing that hides or reorders text. */
export function normaliseDisplayName (raw: string): string {
  const name = raw.normalize('NFC').trim()
  const length = [...name].length
  if (length < 1 || length > DISPLAY_NAME_MAX) throw validationError('displayName', `must be 1 to ${DISPLAY_NAME_MAX} characters after trimming`)
  if (!name.isWellFormed() || FORBIDDEN_IN_NAME.test(name)) throw validationError('displayName', 'must not contain control or bidirectional-override characters')
  return name
}

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

  return {
    /** Anyone signed in sees a user's display info; the e-mail address only on their own. */
    async get (actor: Actor, input: unknown): Promise<User | PublicUser> {
      const { userId } = parseInput(GetUserInput, input)
      const row = await repo.findUserById(db, userId)
      if (row === undefined) throw notFound('User')
      return row.id === actor.userId ? toUser(row) : toPublicUser(row)
    },

    /** Changes the caller's own profile; unset fields stay. Answers the whole User. */
    async updateProfile (actor: Actor, input: unknown): Promise<User> {
      const change = parseInput(UpdateProfileInput, input)
      const displayName = change.displayName === undefined ? undefined : normaliseDisplayName(change.displayName)
      const avatarUrl = change.avatarUrl === undefined ? undefined : await avatarUrlOf(actor, change.avatarUrl)
      const row = await repo.updateProfile(db, actor.userId, { displayName, avatarUrl }, clock.now())
      if (row === undefined) throw notFound('User')
      await options.userChanged(actor.userId)
      return toUser(row)
    },

    /** Display names starting with the query (case-insensitive), or the one user with exactly this address. */
    async search (_actor: Actor, input: unknown): Promise<Page<PublicUser>> {
      const query = parseInput(SearchUsersQuery, input)
      const text = query.q.normalize('NFC').trim()
      if ([...text].length < SEARCH_MIN_CHARS) throw validationError('q', `must be at least ${SEARCH_MIN_CHARS} characters`)
      const window = pageWindow(query)
      if (text.includes('@')) {
        // An address is matched whole: a prefix would let anyone enumerate addresses letter by letter.
        const id = await repo.findUserIdByEmail(db, text.toLowerCase())
        const rows = id === undefined || window.offset > 0 ? [] : await repo.findPublicUsersByIds(db, [id])
        return { items: rows.map(toPublicUser), pagination: paginationOf(window, id === undefined ? 0 : 1) }
      }
      const { rows, total } = await repo.searchByNamePrefix(db, text, window, SEARCH_MAX_MATCHES)
      return { items: rows.map(toPublicUser), pagination: paginationOf(window, total) }
    },

    /** Display info of up to 100 users, in the order asked; unknown ids are left out. */
    async displayInfo (_actor: Actor, input: unknown): Promise<PublicUser[]> {
      const { userIds } = parseInput(GetDisplayInfoInput, input)
      const unique = [...new Set(userIds)]
      const byId = new Map((await repo.findPublicUsersByIds(db, unique)).map((row) => [row.id, toPublicUser(row)]))
      return unique.flatMap((id) => byId.get(id) ?? [])
    }
  }
}
