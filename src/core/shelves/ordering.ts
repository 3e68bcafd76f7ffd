// Where a link goes on its shelf: a fractional-indexing key between its new neighbours, so a move or
// an insertion writes one row. Keys grow by about one character for every six insertions into the
// same gap; a key past KEY_MAX_LENGTH (only reached by hammering one spot, hundreds of times) makes
// the shelf's keys be rewritten evenly, once, rather than growing towards the index's row limit.
import { generateKeyBetween, generateNKeysBetween } from 'fractional-indexing'

export const KEY_MAX_LENGTH = 64

/** The key between `before` and `after` (either null for the shelf's ends). */
export function keyBetween (before: string | null, after: string | null): string {
  return generateKeyBetween(before, after)
}

/** Even, short keys for `count` links in order. */
export function evenKeys (count: number): string[] {
  return generateNKeysBetween(null, null, count)
}
