// The display-name rule (DECISIONS §9, §16), in one place for every name people show one another:
// users' display names, and office names (src/core/offices imports it). NFC, trimmed, 1 to `max`
// characters (code points), nothing that hides or reorders text, and at least one character that
// can be seen: a name made only of zero-width, default-ignorable or blank characters (U+200B,
// U+2060, the tag characters U+E0000–E007F, the Hangul fillers U+3164 and U+FFA0, the Braille
// blank U+2800, spaces of every kind) would show as nobody, or as someone else's name beside it.
import { validationError } from '../errors.js'

/** C0/C1 controls, line and paragraph separators, and the bidirectional marks, embeddings,
 *  overrides and isolates that would let a name reorder the text around it. */
const FORBIDDEN_IN_NAME = /[\p{Cc}\u061C\u200E\u200F\u2028\u2029\u202A-\u202E\u2066-\u2069]/u

/** A character that shows: not Default_Ignorable (zero-width characters, joiners, tag characters,
 *  variation selectors, Hangul fillers, …), not white space, not a format character, not the
 *  Braille blank (which renders as a space but is neither of those). */
const VISIBLE = /[^\p{Default_Ignorable_Code_Point}\p{White_Space}\p{Cf}\u2800]/u

export const DISPLAY_NAME_MAX = 64

/** A name as stored, or a validation error naming `field`. */
export function normaliseDisplayName (raw: string, field = 'displayName', max = DISPLAY_NAME_MAX): string {
  const name = raw.normalize('NFC').trim()
  const length = [...name].length
  if (length < 1 || length > max) throw validationError(field, `must be 1 to ${max} characters after trimming`)
  if (!name.isWellFormed() || FORBIDDEN_IN_NAME.test(name)) throw validationError(field, 'must not contain control or bidirectional-override characters')
  if (!VISIBLE.test(name)) throw validationError(field, 'must contain a visible character, not only invisible or blank ones')
  return name
}
