// The CV task's worker side: runs in a pool thread (pool.ts), never on the event loop. It calls the
// core's pure parse, so a pooled parse is exactly the one computed in-process.
import type { CvParseResult } from '../core/passport/cv.types.js'
import { parseCv } from '../core/passport/cv-parse.js'

export interface CvTaskInput {
  bytes: Uint8Array
}

export default async function cvTask ({ bytes }: CvTaskInput): Promise<CvParseResult> {
  return await parseCv(bytes)
}
