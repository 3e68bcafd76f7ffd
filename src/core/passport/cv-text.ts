// The text of a CV file, whose type is judged by its bytes (file-type), never by its name: PDF
// (unpdf's build of PDF.js 5, which has no eval path left — its `isEvalSupported` switch is gone —
// loading no fonts, which text does not need), DOCX (mammoth, once the archive passed
// docx-guard.ts) or plain UTF-8 text as it is. Anything else, and every file that cannot be read, is
// a refusal with the reason in words. Runs in a child process whose whole memory the kernel caps
// (src/compute/cv.process.ts): that limit, not a look at the file beforehand, is what bounds a PDF
// whose streams unpack to gigabytes. A RangeError from a parser (an allocation the limit refused, a
// stack the file's nesting overflowed) is never taken for a damaged file: it goes up, and the child
// reports the file as over its memory. No network is used.
import { fileTypeFromBuffer } from 'file-type'
import mammoth from 'mammoth'
import { extractText, getDocumentProxy, getResolvedPDFJS } from 'unpdf'
import type { CvRefusal } from './cv.types.js'
import { BrokenZipError, ZipBombError, checkDocxArchive } from './docx-guard.js'

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'
const PDF = 'application/pdf'

export class CvRefused extends Error {
  constructor (readonly refusal: CvRefusal, reason: string) {
    super(reason)
    this.name = 'CvRefused'
  }
}

/** What a parser threw because the file needs more than the process may have: an allocation the
 *  memory limit refused, an array past its length limit, a stack the file's nesting overflowed.
 *  PDF.js passes errors on by message (its worker protocol), so the message is what tells. */
const BEYOND_MEMORY = /allocation failed|invalid (typed )?array length|out of memory|maximum call stack size exceeded/i

/** The error to throw for what a parser threw: a RangeError when the file went beyond memory. */
function beyondMemory (error: unknown): RangeError | undefined {
  if (error instanceof RangeError) return error
  const message = error instanceof Error ? error.message : String(error)
  return BEYOND_MEMORY.test(message) ? new RangeError(message) : undefined
}

/** PDF.js's own exception names for files it will not read. */
function pdfRefusal (error: unknown): CvRefused {
  const name = (error as { name?: unknown }).name
  if (name === 'PasswordException') return new CvRefused('encrypted', 'is an encrypted (password-protected) PDF: remove the password and send it again')
  if (name === 'InvalidPDFException') return new CvRefused('corrupt', 'is a damaged PDF that cannot be read')
  return new CvRefused('corrupt', `is a PDF that cannot be read: ${error instanceof Error ? error.message.slice(0, 200) : 'unknown error'}`)
}

async function pdfText (bytes: Buffer): Promise<string> {
  let text: string
  try {
    const pdf = await getDocumentProxy(new Uint8Array(bytes), { disableFontFace: true, useSystemFonts: false, verbosity: 0 })
    try {
      text = (await extractText(pdf, { mergePages: true })).text
    } finally {
      await pdf.loadingTask.destroy()
    }
  } catch (error) {
    const tooBig = beyondMemory(error)
    if (tooBig !== undefined) throw tooBig
    throw pdfRefusal(error)
  }
  if (text.trim() === '') throw new CvRefused('no-text', 'is a PDF with no text in it (a scan, or pages of images): send a PDF with selectable text, a DOCX or plain text')
  return text
}

async function docxText (bytes: Buffer): Promise<string> {
  try {
    await checkDocxArchive(bytes)
  } catch (error) {
    if (error instanceof ZipBombError) throw new CvRefused('zip-bomb', error.message)
    if (error instanceof BrokenZipError) throw new CvRefused('corrupt', error.message)
    throw error
  }
  let text: string
  try {
    text = (await mammoth.extractRawText({ buffer: bytes })).value
  } catch (error) {
    const tooBig = beyondMemory(error)
    if (tooBig !== undefined) throw tooBig
    throw new CvRefused('corrupt', `is a DOCX that cannot be read: ${error instanceof Error ? error.message.slice(0, 200) : 'unknown error'}`)
  }
  if (text.trim() === '') throw new CvRefused('no-text', 'is a DOCX with no text in it')
  return text
}

/** Control characters other than tab, line feed, form feed and carriage return. */
const BINARY = /[\u0000-\u0008\u000b\u000e-\u001f\u007f]/ // eslint-disable-line no-control-regex

function plainText (bytes: Uint8Array): string {
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    throw new CvRefused('unsupported-type', 'is neither a PDF, a DOCX nor UTF-8 text')
  }
  if (BINARY.test(text)) throw new CvRefused('unsupported-type', 'is neither a PDF, a DOCX nor plain text (it holds binary data)')
  if (text.trim() === '') throw new CvRefused('no-text', 'holds no text')
  return text.replace(/^\ufeff/, '')
}

/** Loads PDF.js now (unpdf otherwise loads it with the first PDF), for a worker to be ready before its first task. */
export async function loadCvParsers (): Promise<void> {
  await getResolvedPDFJS()
}

/** The file's text; throws CvRefused with the reason. */
export async function extractCvText (bytes: Uint8Array): Promise<string> {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let type: string | undefined
  try {
    type = (await fileTypeFromBuffer(buffer))?.mime
  } catch {
    type = undefined
  }
  if (type === PDF) return await pdfText(buffer)
  if (type === DOCX) return await docxText(buffer)
  if (type === undefined) return plainText(bytes)
  throw new CvRefused('unsupported-type', `is ${type}, not a CV: send a PDF, a DOCX or plain text`)
}
