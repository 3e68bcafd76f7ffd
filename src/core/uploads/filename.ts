// The name a client gives an uploaded file is kept only as a label: it never becomes a path (files
// are stored under their id) and never decides the type (the bytes do). It is still shown to people
// and sent back in Content-Disposition, so it is cleaned first.

/** Characters, after cleaning; the extension is kept when a longer name is cut. */
export const FILENAME_MAX = 255
/** Cleaning reads at most this much of a name (a header may carry far more). */
const RAW_MAX = 4_096
const EXTENSION_MAX = 16
/** C0 and C1 controls, DEL, and the bidi controls that can make `exe.png` read as `gnp.exe`. */
// eslint-disable-next-line no-control-regex
const UNWANTED = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g

export function sanitiseFilename (raw: string | undefined): string {
  let name = (raw ?? '').slice(0, RAW_MAX).normalize('NFC')
  // A path is not a name: some clients send the whole path; only its last segment is the name.
  name = name.split(/[/\\]/).at(-1) ?? ''
  name = name.replace(UNWANTED, '').replace(/\s+/g, ' ').trim()
  // A leading dot hides a file on download to Unix-like systems, and `..` reads as a path.
  name = name.replace(/^\.+/, '').trim()
  const chars = Array.from(name) // code points, so a cut never splits a surrogate pair
  if (chars.length > FILENAME_MAX) {
    const dot = name.lastIndexOf('.')
    const extension = dot > 0 ? Array.from(name.slice(dot)) : []
    const keep = extension.length > 1 && extension.length <= EXTENSION_MAX ? extension : []
    name = chars.slice(0, FILENAME_MAX - keep.length).join('').trimEnd() + keep.join('')
  }
  return name === '' ? 'file' : name
}
