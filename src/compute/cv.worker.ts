// The CV task's worker side: runs in a pool thread (pool.ts), never on the event loop. It calls the
// core's pure parse, so a pooled parse is exactly the one computed in-process. The parsers (PDF.js,
// mammoth) load with this module, before any task runs, so `started` means the parse itself began.
import type { MessagePort } from 'node:worker_threads'
import type { CvParseResult } from '../core/passport/cv.types.js'
import { loadCvParsers, parseCv } from '../core/passport/cv-parse.js'

await loadCvParsers()

export interface CvTaskInput {
  bytes: Uint8Array
  /** Told when the parse begins (the task reached a thread and its module is loaded). */
  started?: MessagePort
}

export default async function cvTask ({ bytes, started }: CvTaskInput): Promise<CvParseResult> {
  started?.postMessage('started')
  started?.close()
  return await parseCv(bytes)
}
