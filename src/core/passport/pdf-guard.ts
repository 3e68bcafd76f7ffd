// A PDF's streams are mostly deflate-compressed, and PDF.js unpacks a stream whole into memory that
// the worker's heap limit does not count (ArrayBuffers): a 1 MiB PDF whose page is a deflate bomb
// unpacks to a gigabyte. Before PDF.js opens a PDF, each of its Flate streams is unpacked here
// into nothing, with one budget for them all (zlib's maxOutputLength stops at the budget, so the
// check itself never holds more than that); a PDF past it is refused. Other filters (LZW,
// RunLength) are rare and unpack far less per byte; the task's time limit stops the rest.
import { inflateSync } from 'node:zlib'

/** Far above the text and fonts of any CV (the file itself is at most 5 MiB). */
export const PDF_UNPACKED_MAX = 64 * 1024 * 1024

export class PdfBombError extends Error {}

const STREAM = Buffer.from('stream')
const END_STREAM = Buffer.from('endstream')
const DICT_START = Buffer.from('<<')

/** Where each stream's data starts and ends, and whether its dictionary names FlateDecode. */
function * flateStreams (pdf: Buffer): Generator<Buffer> {
  let from = 0
  while (true) {
    const keyword = pdf.indexOf(STREAM, from)
    if (keyword === -1) return
    from = keyword + STREAM.length
    // "endstream" also contains "stream"; only a keyword that opens data counts.
    if (keyword >= 3 && pdf.subarray(keyword - 3, keyword).toString('latin1') === 'end') continue
    let start = from
    if (pdf[start] === 0x0d) start++
    if (pdf[start] === 0x0a) start++
    const end = pdf.indexOf(END_STREAM, start)
    if (end === -1) return
    const dictionary = pdf.subarray(Math.max(0, pdf.lastIndexOf(DICT_START, keyword)), keyword).toString('latin1')
    from = end + END_STREAM.length
    if (dictionary.includes('/FlateDecode') || /\/Fl[\s/>\]]/.test(dictionary)) yield pdf.subarray(start, end)
  }
}

/** Returns when the PDF's Flate streams unpack to at most PDF_UNPACKED_MAX bytes in all. */
export function checkPdfStreams (pdf: Buffer): void {
  let left = PDF_UNPACKED_MAX
  for (const data of flateStreams(pdf)) {
    try {
      left -= inflateSync(data, { maxOutputLength: left + 1, finishFlush: 2 /* Z_SYNC_FLUSH: a stream cut short is read as far as it goes */ }).length
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') left = -1
      // A stream that does not inflate is PDF.js's to judge (it may be damaged, or not Flate after all).
    }
    if (left < 0) throw new PdfBombError(`is refused as a compression bomb: its streams unpack to more than ${PDF_UNPACKED_MAX / 1024 / 1024} MiB`)
  }
}
