// CV files the tests (and bench/cv.ts) build themselves: PDFs written object by object, DOCX files
// zipped by hand (so a test can also write what no honest tool would: overlapping entries, sizes
// that lie, streams that unpack to gigabytes). Each is at most a few MiB, and built in well under a
// second without ever holding what it unpacks to.
import { createHash } from 'node:crypto'
import http from 'node:http'
import { constants, crc32, deflateRawSync, deflateSync } from 'node:zlib'
import { multipartBytes } from './uploads.js'

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

const MiB = 1024 * 1024

/** zlib's Adler-32 of `data`. */
function adler32 (data: Buffer): number {
  let a = 1
  let b = 0
  for (let i = 0; i < data.length; i += 4096) {
    for (const byte of data.subarray(i, i + 4096)) { a += byte; b += a }
    a %= 65521
    b %= 65521
  }
  return (b << 16 | a) >>> 0
}

/** The Adler-32 of two pieces, from each one's and the second's length (zlib's adler32_combine). */
function adler32Combine (first: number, second: number, secondLength: number): number {
  const BASE = 65521
  const rem = secondLength % BASE
  let sum1 = first & 0xffff
  let sum2 = (rem * sum1) % BASE
  sum1 += (second & 0xffff) + BASE - 1
  sum2 += ((first >>> 16) & 0xffff) + ((second >>> 16) & 0xffff) + BASE - rem
  if (sum1 >= BASE) sum1 -= BASE
  if (sum1 >= BASE) sum1 -= BASE
  if (sum2 >= BASE * 2) sum2 -= BASE * 2
  if (sum2 >= BASE) sum2 -= BASE
  return ((sum2 << 16) | sum1) >>> 0
}

/**
 * A zlib stream (what /FlateDecode reads) of `chunk` repeated `times` times, built in milliseconds
 * whatever it unpacks to: the chunk is compressed once and ends on a full flush (byte-aligned, no
 * reference back), so its compressed bytes repeat as they are; then the final block and the checksum.
 * `corruptAfter` puts a block no inflater can read after that many chunks, and ends there.
 */
export function repeatedFlate (chunk: Buffer, times: number, corruptAfter?: number): Buffer {
  const block = deflateRawSync(chunk, { level: 9, finishFlush: constants.Z_FULL_FLUSH })
  const count = corruptAfter ?? times
  const parts: Buffer[] = [Buffer.from([0x78, 0xda])]
  for (let i = 0; i < count; i++) parts.push(block)
  if (corruptAfter !== undefined) {
    // BFINAL 1, BTYPE 11: a block type that does not exist.
    parts.push(Buffer.from([0x07, 0xff, 0xff, 0xff]))
    return Buffer.concat(parts)
  }
  const one = adler32(chunk)
  let sum = one
  for (let i = 1; i < times; i++) sum = adler32Combine(sum, one, chunk.length)
  const checksum = Buffer.alloc(4)
  checksum.writeUInt32BE(sum)
  // An empty final block with fixed codes (BFINAL 1, BTYPE 01, end-of-block).
  parts.push(Buffer.from([0x03, 0x00]), checksum)
  return Buffer.concat(parts)
}

/** A one-page PDF whose content stream has these dictionary entries (besides /Length) and this data,
 *  with a correct cross-reference table. `extra` objects follow it (numbered from 5). */
export function pdfWithStream (entries: string, data: Buffer, extra: readonly string[] = [], trailerExtra = ''): Buffer {
  return assemblePdf([
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> /Contents 4 0 R >>',
    `<< /Length ${data.length} ${entries} >>\nstream\n${data.toString('latin1')}\nendstream`,
    ...extra
  ], trailerExtra)
}

/** A PDF whose one content stream is a deflate bomb: `mebibytes` MiB of spaces, compressed (about
 *  1 KiB of file per MiB unpacked). */
export function pdfBomb (mebibytes: number): Buffer {
  return pdfWithStream('/Filter /FlateDecode', repeatedFlate(Buffer.alloc(MiB, 0x20), mebibytes))
}

/** The deflate bomb with its filter name written with an escape (`/Flat#65Decode` is /FlateDecode). */
export function escapedFilterBomb (mebibytes = 1024): Buffer {
  return pdfWithStream('/Filter /Flat#65Decode', repeatedFlate(Buffer.alloc(MiB, 0x20), mebibytes))
}

/** The deflate bomb with a nested dictionary (/DecodeParms << … >>) between its /Filter and `stream`. */
export function nestedParmsBomb (mebibytes = 1024): Buffer {
  return pdfWithStream('/Filter /FlateDecode /DecodeParms << /Predictor 1 /Columns 1 >>', repeatedFlate(Buffer.alloc(MiB, 0x20), mebibytes))
}

/** Deflate twice over (`[/FlateDecode /FlateDecode]`): about a kilobyte of stream, 512 MiB of zeros. */
export function doubleFlateBomb (mebibytes = 512): Buffer {
  return pdfWithStream('/Filter [/FlateDecode /FlateDecode]', deflateSync(repeatedFlate(Buffer.alloc(MiB), mebibytes), { level: 9 }))
}

/** A deflate bomb that stops inflating (a block no inflater reads) after `mebibytes` MiB. */
export function brokenFlateBomb (mebibytes = 1024): Buffer {
  return pdfWithStream('/Filter /FlateDecode', repeatedFlate(Buffer.alloc(MiB, 0x20), mebibytes, mebibytes))
}

/** RC4, the cipher of the PDF standard security handler's revision 2. */
function rc4 (key: Buffer, data: Buffer): Buffer {
  const s = Array.from({ length: 256 }, (_, i) => i)
  for (let i = 0, j = 0; i < 256; i++) {
    j = (j + s[i]! + key[i % key.length]!) & 255;
    [s[i], s[j]] = [s[j]!, s[i]!]
  }
  const out = Buffer.alloc(data.length)
  for (let n = 0, i = 0, j = 0; n < data.length; n++) {
    i = (i + 1) & 255
    j = (j + s[i]!) & 255;
    [s[i], s[j]] = [s[j]!, s[i]!]
    out[n] = data[n]! ^ s[(s[i]! + s[j]!) & 255]!
  }
  return out
}

/** The password padding of the PDF standard security handler. */
const PASSWORD_PAD = Buffer.from('28bf4e5e4e758a4164004e56fffa01082e2e00b6d0683e802f0ca9fe6453697a', 'hex')

/**
 * An encrypted PDF (standard security handler, RC4 40-bit) with an empty user password, so readers
 * open it without asking, whose content stream is a deflate bomb of `mebibytes` MiB: encrypted, its
 * bytes say nothing of what they hold until the reader decrypts them.
 */
export function encryptedBomb (mebibytes = 1024): Buffer {
  const md5 = (...parts: Buffer[]): Buffer => createHash('md5').update(Buffer.concat(parts)).digest()
  const owner = rc4(md5(PASSWORD_PAD).subarray(0, 5), PASSWORD_PAD)
  const permissions = -44
  const p = Buffer.alloc(4)
  p.writeInt32LE(permissions)
  const id = Buffer.alloc(16, 0x01)
  const key = md5(PASSWORD_PAD, owner, p, id).subarray(0, 5)
  const user = rc4(key, PASSWORD_PAD)
  // Object 4 (the content stream), generation 0.
  const objectKey = md5(key, Buffer.from([4, 0, 0, 0, 0])).subarray(0, 10)
  const data = rc4(objectKey, repeatedFlate(Buffer.alloc(MiB, 0x20), mebibytes))
  return pdfWithStream('/Filter /FlateDecode', data,
    [`<< /Filter /Standard /V 1 /R 2 /O <${owner.toString('hex')}> /U <${user.toString('hex')}> /P ${permissions} >>`],
    `/Encrypt 5 0 R /ID [<${id.toString('hex')}> <${id.toString('hex')}>] `)
}

/** A Word document that passes every zip check (one part, honest sizes, under the unpacked bound)
 *  and whose document part is `paragraphs` tiny paragraphs: millions of XML elements, each a node
 *  in the tree a reader builds. */
export function xmlBombDocx (paragraphs = 1_500_000): Buffer {
  const [types, rels] = docxEntries([])
  const body = '<w:p><w:r><w:t>a</w:t></w:r></w:p>'.repeat(paragraphs)
  const document = `<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${body}</w:body></w:document>`
  return zip([types!, rels!, { name: 'word/document.xml', data: Buffer.from(document) }])
}

/** A CV sent to `POST /api/cv/parse` over real HTTP, as a browser's form sends it. */
export async function postCv (url: string, cookie: string, content: Buffer, filename = 'cv.bin'): Promise<{ status: number, body: any, retryAfter: string | null }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const form = new FormData()
  form.append('file', new Blob([new Uint8Array(content)]), filename)
  const response = await fetch(`${url}/api/cv/parse`, { method: 'POST', headers: { cookie: `app_session=${cookie}` }, body: form })
  return { status: response.status, body: await response.json(), retryAfter: response.headers.get('retry-after') }
}

/** The form `POST /api/cv/parse` takes, built ahead of sending: a test that measures this process's
 *  memory while the service handles CVs builds its requests before it starts measuring, so the
 *  client's copies of each file are not counted as the service's. */
export function cvForm (content: Buffer, filename = 'cv.bin'): { body: Buffer, contentType: string } {
  return multipartBytes({ name: 'file', filename, content })
}

/** Sends a form built by `cvForm` over node:http, writing its bytes as they are. */
export async function postCvForm (url: string, cookie: string, form: { body: Buffer, contentType: string }): Promise<{ status: number, body: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  return await new Promise((resolve, reject) => {
    const request = http.request(`${url}/api/cv/parse`, { method: 'POST', headers: { cookie: `app_session=${cookie}`, 'content-type': form.contentType, 'content-length': String(form.body.length) } }, (response) => {
      let text = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => { text += chunk })
      response.on('end', () => { resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }) })
      response.on('error', reject)
    })
    request.on('error', reject)
    request.end(form.body)
  })
}

/** Parses a tiny text CV until the app's CV parser answers: a parser process starts with the first
 *  parse (and again after a bomb ended it), which on a crowded machine can take past the 10 s a
 *  parse may wait (503, Retry-After). */
export async function warmCvParser (url: string, cookie: string, tries = 6): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if ((await postCv(url, cookie, Buffer.from('Skills\nGo\n'), 'warm.txt')).status !== 503) return
  }
}
