// The key a user is found by (DECISIONS §9: display names starting with the query, case-insensitive),
// computed here rather than by the database, so that it is the same on Postgres and PGlite whatever
// their locale (Postgres' lower() follows the database's LC_CTYPE; under "C" it lowers ASCII only, so
// `Élodie` was not found by `él`). Stored in `users.search_key` and compared byte-wise (collate "C").
// The key: compatibility-normalised (NFKC: a full-width Ｅ or a ligature ﬁ as the letters), Unicode
// full case folding (CaseFolding.txt's C and F mappings, from a package that pins the Unicode data,
// so the key of a stored name does not move with Node's ICU), default-ignorable characters removed
// (a zero-width space inside a name does not hide it) — close to Unicode's NFKC_Casefold. The query
// gets the same key, so its prefix matches.
import { caseFold } from 'unicode-case-folding'

const IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu

/** The search key of a display name or of a query. A change here needs a migration that re-keys every user. */
export function searchKeyOf (text: string): string {
  return caseFold(text.normalize('NFKC')).replace(IGNORABLE, '').normalize('NFKC')
}
