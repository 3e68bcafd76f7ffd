// The CV parser's child process (child-pool.ts starts it, then caps its memory): the core's pure
// parse, one file at a time, so a parse here is exactly the one computed in-process. PDF.js and
// mammoth load before `ready`, so what they hold counts against the limit before any file arrives.
import { loadCvParsers, parseCv } from '../core/passport/cv-parse.js'
import { serveInChild } from './child-task.js'

await loadCvParsers()
await serveInChild(async (bytes: Uint8Array) => await parseCv(bytes))
