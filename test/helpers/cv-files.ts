// CV files the tests (and bench/cv.ts) build themselves: PDFs written object by object, DOCX files
// zipped by hand (so a test can also write what no honest tool would: overlapping entries, sizes
// that lie). Each is a few KiB.
import { Readable } from 'node:stream'
import { buffer } from 'node:stream/consumers'
import { crc32, createDeflate, deflateRawSync } from 'node:zlib'

/** A PDF string literal's text with its special characters escaped. */
function pdfText (text: string): string {
  // Dashes in WinAnsiEncoding, Helvetica's: en dash 0226, em dash 0227 (octal escapes).
  return text.replace(/[\\()]/g, (c) => `\\${c}`).replace(/–/g, '\\226').replace(/—/g, '\\227')
}

/** Assembles numbered objects into a PDF with a correct cross-reference table. */
function assemblePdf (objects: readonly string[], trailerExtra = ''): Buffer {
  let body = '%PDF-1.4\n%\xe2\xe3\xcf\xd3\n'
  const offsets: number[] = []
  objects.forEach((object, i) => {
    offsets.push(Buffer.byteLength(body, 'latin1'))
    body += `${i + 1} 0 obj\n${object}\nendobj\n`
  })
  const xref = Buffer.byteLength(body, 'latin1')
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`
  for (const offset of offsets) body += `${String(offset).padStart(10, '0')} 00000 n \n`
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R ${trailerExtra}>>\nstartxref\n${xref}\n%%EOF\n`
  return Buffer.from(body, 'latin1')
}

/** A PDF whose pages show these lines of text (Helvetica), one array of lines per page. */
export function pdfWithText (pages: ReadonlyArray<readonly string[]>): Buffer {
  const pageIds = pages.map((_, i) => 4 + i * 2)
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(' ')}] /Count ${pages.length} >>`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>'
  ]
  for (const [i, lines] of pages.entries()) {
    const content = `BT /F1 11 Tf 14 TL 50 780 Td ${lines.map((l) => `(${pdfText(l)}) '`).join(' ')} ET`
    objects.push(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> /Contents ${5 + i * 2} 0 R >>`)
    objects.push(`<< /Length ${Buffer.byteLength(content, 'latin1')} >>\nstream\n${content}\nendstream`)
  }
  return assemblePdf(objects)
}

/** What a scanner makes, as far as text goes: a page that only paints (here a grey rectangle). */
export function pdfWithoutText (): Buffer {
  const content = '0.5 g 50 50 495 742 re f'
  return assemblePdf([
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R >>',
    `<< /Length ${content.length} >>\nstream\n${content}\nendstream`
  ])
}

/** A PDF encrypted with a user password (standard security handler, RC4 40-bit): readers need the
 *  password, which nobody sends. */
export function encryptedPdf (): Buffer {
  const content = 'BT /F1 11 Tf 50 780 Td (secret) Tj ET'
  return assemblePdf([
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R >>',
    `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
    `<< /Filter /Standard /V 1 /R 2 /O <${'7a'.repeat(32)}> /U <${'3c'.repeat(32)}> /P -44 >>`
  ], `/Encrypt 5 0 R /ID [<${'01'.repeat(16)}> <${'01'.repeat(16)}>] `)
}

/** Starts like a PDF, then is nothing of the kind. */
export function corruptPdf (): Buffer {
  return Buffer.concat([Buffer.from('%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 9 0 R'), Buffer.alloc(2000, 0x41)])
}

interface ZipEntry {
  name: string
  data: Buffer
  /** Overrides what the central directory declares (a lie, for the tests). */
  declaredSize?: number
}

/** A zip archive (deflate) of these entries. `overlap` adds that many central-directory entries
 *  that all point at the first entry's data: the "overlapping files" zip bomb. */
export function zip (entries: readonly ZipEntry[], overlap = 0): Buffer {
  const locals: Buffer[] = []
  const central: Buffer[] = []
  let offset = 0
  const centralEntry = (name: Buffer, crc: number, compressed: number, size: number, at: number): Buffer => {
    const header = Buffer.alloc(46)
    header.writeUInt32LE(0x02014b50, 0)
    header.writeUInt16LE(20, 4)
    header.writeUInt16LE(20, 6)
    header.writeUInt16LE(8, 10)
    header.writeUInt32LE(crc, 16)
    header.writeUInt32LE(compressed, 20)
    header.writeUInt32LE(size, 24)
    header.writeUInt16LE(name.length, 28)
    header.writeUInt32LE(at, 42)
    return Buffer.concat([header, name])
  }
  let first: { crc: number, compressed: number, size: number } | undefined
  for (const entry of entries) {
    const name = Buffer.from(entry.name)
    const compressed = deflateRawSync(entry.data, { level: 9 })
    const crc = crc32(entry.data)
    const size = entry.declaredSize ?? entry.data.length
    const local = Buffer.alloc(30)
    local.writeUInt32LE(0x04034b50, 0)
    local.writeUInt16LE(20, 4)
    local.writeUInt16LE(8, 8)
    local.writeUInt32LE(crc, 14)
    local.writeUInt32LE(compressed.length, 18)
    local.writeUInt32LE(size, 22)
    local.writeUInt16LE(name.length, 26)
    locals.push(local, name, compressed)
    central.push(centralEntry(name, crc, compressed.length, size, offset))
    first ??= { crc, compressed: compressed.length, size }
    offset += local.length + name.length + compressed.length
  }
  const kernel = first
  if (kernel !== undefined) {
    for (let i = 0; i < overlap; i++) central.push(centralEntry(Buffer.from(`word/media/copy${i}.bin`), kernel.crc, kernel.compressed, kernel.size, 0))
  }
  const directory = Buffer.concat(central)
  const end = Buffer.alloc(22)
  end.writeUInt32LE(0x06054b50, 0)
  end.writeUInt16LE(central.length, 8)
  end.writeUInt16LE(central.length, 10)
  end.writeUInt32LE(directory.length, 12)
  end.writeUInt32LE(offset, 16)
  return Buffer.concat([...locals, directory, end])
}

function xmlText (text: string): string {
  return text.replace(/[<>&]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;' })[c] ?? c)
}

const CONTENT_TYPES = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
const RELS = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>'

function documentXml (paragraphs: readonly string[]): string {
  const body = paragraphs.map((p) => `<w:p><w:r><w:t xml:space="preserve">${xmlText(p)}</w:t></w:r></w:p>`).join('')
  return `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${body}</w:body></w:document>`
}

/** The parts of a minimal Word document with these paragraphs. */
function docxEntries (paragraphs: readonly string[]): ZipEntry[] {
  return [
    { name: '[Content_Types].xml', data: Buffer.from(CONTENT_TYPES) },
    { name: '_rels/.rels', data: Buffer.from(RELS) },
    { name: 'word/document.xml', data: Buffer.from(documentXml(paragraphs)) }
  ]
}

/** A minimal Word document with these paragraphs. */
export function docx (paragraphs: readonly string[]): Buffer {
  return zip(docxEntries(paragraphs))
}

/** A Word document that is a zip bomb of a few KiB: a 1 MiB run of zeros stored once, named again
 *  by `copies` central-directory entries, so unpacking it all writes copies × 1 MiB. */
export function zipBombDocx (copies = 100): Buffer {
  return zip([{ name: 'word/media/zeros.bin', data: Buffer.alloc(1024 * 1024) }, ...docxEntries(['Jane Doe'])], copies)
}

/** A Word document whose document part says it unpacks to 100 bytes, and unpacks to 20 MiB. */
export function lyingDocx (): Buffer {
  const [types, rels] = docxEntries([])
  const big = `<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>${'a'.repeat(20 * 1024 * 1024)}</w:t></w:r></w:p></w:body></w:document>`
  return zip([types!, rels!, { name: 'word/document.xml', data: Buffer.from(big), declaredSize: 100 }])
}

/** The first bytes of a PNG image (enough for any sniffer). */
export function pngImage (): Buffer {
  const header = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489', 'hex')
  return Buffer.concat([header, Buffer.alloc(64)])
}

/** A PDF whose one content stream is a deflate bomb: `mebibytes` MiB of spaces, compressed (streamed
 *  through zlib a mebibyte at a time, so building a gigabyte's bomb holds only the compressed bytes). */
export async function pdfBomb (mebibytes: number): Promise<Buffer> {
  const spaces = Buffer.alloc(1024 * 1024, 0x20)
  const packed = await buffer(Readable.from((function * () { for (let i = 0; i < mebibytes; i++) yield spaces })()).pipe(createDeflate({ level: 9 })))
  const head = assemblePdf([
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R >>',
    `<< /Length ${packed.length} /Filter /FlateDecode >>\nstream\n@@\nendstream`
  ])
  const at = head.indexOf('@@')
  return Buffer.concat([head.subarray(0, at), packed, head.subarray(at + 2)])
}

/** Parses a tiny text CV until the app's CV worker answers: its first task loads the parsers, which
 *  on a crowded machine can take past the 10 s limit (503, Retry-After) before any parse begins. */
export async function warmCvParser (url: string, cookie: string, tries = 6): Promise<void> {
  for (let i = 0; i < tries; i++) {
    const form = new FormData()
    form.append('file', new Blob([new TextEncoder().encode('Skills\nGo\n')]), 'warm.txt')
    const res = await fetch(`${url}/api/cv/parse`, { method: 'POST', headers: { cookie: `app_session=${cookie}` }, body: form })
    await res.arrayBuffer()
    if (res.status !== 503) return
  }
}
