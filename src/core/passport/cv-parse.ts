// CV parsing as one pure step, from a file's bytes to a preview or a refusal: what the parser's
// child process runs (src/compute/cv.process.ts), so the result is the same wherever it is computed.
import { CvRefused, extractCvText } from './cv-text.js'

export { loadCvParsers } from './cv-text.js'
import { suggestFromText } from './cv-suggestions.js'
import type { CvParseResult } from './cv.types.js'

export async function parseCv (bytes: Uint8Array): Promise<CvParseResult> {
  try {
    return { ok: true, preview: suggestFromText(await extractCvText(bytes)) }
  } catch (error) {
    if (error instanceof CvRefused) return { ok: false, refusal: error.refusal, reason: error.message }
    throw error
  }
}
