// The classification task's worker side: runs in a pool thread (pool.ts), never on the event loop.
// It calls the core's pure classifier, so a pooled classification is exactly the one computed
// in-process (the same text always gets the same labels).
import { classifyText } from '../core/safety/classify.js'
import type { Classification } from '../core/safety/safety.types.js'

export default function classifyTask (text: string): Classification {
  return classifyText(text)
}
