// A DOCX is a zip archive, and a zip can unpack to far more than it weighs: a "zip bomb". Before a
// DOCX is opened (mammoth would unpack what it reads in full), its central directory is read
// (yauzl, nothing unpacked) and refused when it has too many entries or declares too much in all;
// then every entry is unpacked once into nothing, stopping at its declared size, so that an entry
// whose header understates what it holds is refused too. What passes unpacks to at most
// DOCX_UNPACKED_MAX bytes, whatever the reader. A fast first check with a precise reason, not the
// bound: what an archive that passes it makes of memory (a document part whose XML builds a huge
// tree) is held by the parser's process limit (src/compute/child-pool.ts).
import yauzl from 'yauzl'

/** A Word CV is a few dozen parts; images add one each. */
export const DOCX_ENTRIES_MAX = 1000
/** Far above any CV's text and images (the file itself is at most 5 MiB). */
export const DOCX_UNPACKED_MAX = 64 * 1024 * 1024

function mebibytes (bytes: number): string {
  return `${Math.round(bytes / 1024 / 1024)} MiB`
}

function openZip (bytes: Buffer): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(bytes, { lazyEntries: true, validateEntrySizes: true }, (error, zip) => { if (error !== null) reject(error); else resolve(zip) })
  })
}

function entriesOf (zip: yauzl.ZipFile): Promise<yauzl.Entry[]> {
  return new Promise((resolve, reject) => {
    const entries: yauzl.Entry[] = []
    zip.on('entry', (entry: yauzl.Entry) => { entries.push(entry); zip.readEntry() })
    zip.on('end', () => { resolve(entries) })
    zip.on('error', reject)
    zip.readEntry()
  })
}

/** Unpacks one entry into nothing; yauzl fails the stream past the entry's declared size. */
function drain (zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<void> {
  return new Promise((resolve, reject) => {
    zip.openReadStream(entry, (error, stream) => {
      if (error !== null) { reject(error); return }
      stream.on('data', () => {})
      stream.on('end', resolve)
      stream.on('error', reject)
    })
  })
}

export class ZipBombError extends Error {}
export class BrokenZipError extends Error {}

/** Resolves when the archive is safe to open; rejects with ZipBombError or BrokenZipError. */
export async function checkDocxArchive (bytes: Buffer): Promise<void> {
  let zip: yauzl.ZipFile
  try {
    zip = await openZip(bytes)
  } catch (error) {
    throw new BrokenZipError(`is not a readable DOCX (zip): ${(error as Error).message}`)
  }
  try {
    if (zip.entryCount > DOCX_ENTRIES_MAX) throw new ZipBombError(`is refused as a zip bomb: it has ${zip.entryCount} entries (at most ${DOCX_ENTRIES_MAX})`)
    let entries: yauzl.Entry[]
    try {
      entries = await entriesOf(zip)
    } catch (error) {
      throw new BrokenZipError(`is not a readable DOCX (zip): ${(error as Error).message}`)
    }
    const declared = entries.reduce((sum, e) => sum + e.uncompressedSize, 0)
    if (declared > DOCX_UNPACKED_MAX) throw new ZipBombError(`is refused as a zip bomb: it declares ${mebibytes(declared)} unpacked (at most ${mebibytes(DOCX_UNPACKED_MAX)})`)
    for (const entry of entries) {
      try {
        await drain(zip, entry)
      } catch (error) {
        const message = (error as Error).message
        if (/too many bytes/i.test(message)) throw new ZipBombError(`is refused as a zip bomb: "${entry.fileName.slice(0, 100)}" unpacks to more than it declares`)
        throw new BrokenZipError(`is not a readable DOCX (zip): ${message}`)
      }
    }
  } finally {
    zip.close()
  }
}
