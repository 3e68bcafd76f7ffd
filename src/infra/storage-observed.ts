// Storage as operators see it: a span per call while tracing is on (src/infra/tracing.ts), and the
// bytes stored counted for the metrics. A decorator, so both stores (local disk, S3) get the same.
import { pipeline, Transform } from 'node:stream'
import type { Storage } from './storage.js'
import { traced } from './tracing.js'

export interface StorageObserver {
  /** Bytes of a `put` that completed. */
  stored (bytes: number): void
}

export function observeStorage (storage: Storage, observer: StorageObserver | undefined): Storage {
  return {
    kind: storage.kind,
    async put (key, body, contentType) {
      await traced('storage put', { 'storage.kind': storage.kind }, async () => {
        if (observer === undefined) { await storage.put(key, body, contentType); return }
        // Counted on the way through; pipeline() hands the body's failure on, so put() still sees it first.
        let bytes = 0
        const counted = new Transform({
          transform (chunk: Buffer, _encoding, done) {
            bytes += chunk.length
            done(null, chunk)
          }
        })
        pipeline(body, counted, () => {})
        await storage.put(key, counted, contentType)
        observer.stored(bytes)
      })
    },
    get: async (key) => await traced('storage get', { 'storage.kind': storage.kind }, async () => await storage.get(key)),
    remove: async (keys) => await traced('storage remove', { 'storage.kind': storage.kind, 'storage.keys': keys.length }, async () => await storage.remove(keys)),
    // The sweep's listing runs outside requests, where no span is made.
    list: (before) => storage.list(before),
    probe: async () => { await storage.probe() },
    close: async () => { await storage.close() }
  }
}
