// Uploads on local disk: DATA_DIR/uploads/<key>. A file is written to DATA_DIR/uploads/.partial/
// first and renamed into place once complete and flushed, so a reader never sees a partial file
// under its key, and a failed write (a client gone, a file over its limit, a full disk) leaves
// nothing behind: its temporary file is removed. The rename is atomic because both names are on
// one file system.
import { randomBytes } from 'node:crypto'
import { constants } from 'node:fs'
import { access, mkdir, open, opendir, readFile, rename, rm, stat, writeFile, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import type { Logger } from './logger.js'
import { checkKey, type Storage } from './storage.js'

/** Temporary files older than this at start-up belong to a process that died mid-upload. */
const STALE_PARTIAL_MS = 60 * 60 * 1000

/** The health probe checks access on every round but writes a file at most this often: a write,
 *  read and delete per round cost a busy instance ~15 % of its CPU under a /health flood. */
const PROBE_WRITE_EVERY_MS = 60_000

export async function createLocalStorage (root: string, log: Logger): Promise<Storage> {
  const partial = join(root, '.partial')
  try {
    await mkdir(partial, { recursive: true })
  } catch (error) {
    // Not fatal: the health report shows storage unhealthy and uploads answer 503 until it is fixed.
    log.error({ err: error, dir: root }, 'uploads directory cannot be created')
  }
  void sweepStalePartials(partial, log)
  const pathOf = (key: string): string => join(root, checkKey(key))
  let lastProbeWrite: number | undefined

  return {
    kind: 'local',

    async put (key, body) {
      const final = pathOf(key)
      const temp = join(partial, `${checkKey(key)}.${randomBytes(6).toString('hex')}`)
      let handle: FileHandle | undefined
      try {
        handle = await open(temp, 'wx')
        // Flushed to disk before it is closed (`flush`): a file recorded as uploaded must survive a
        // crash right after the answer. The stream closes the handle when it ends or fails.
        await pipeline(body, handle.createWriteStream({ flush: true, highWaterMark: 1024 * 1024 }))
        await rename(temp, final)
      } catch (error) {
        // Already closed by the stream, unless opening the stream failed; close() also waits for
        // writes still in flight, so nothing lands after the file is removed.
        await handle?.close().catch(ignore)
        await rm(temp, { force: true }).catch(ignore)
        if (!body.destroyed) body.destroy()
        throw error
      }
    },

    async get (key) {
      let handle: FileHandle
      try {
        handle = await open(pathOf(key), 'r')
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
        throw error
      }
      return handle.createReadStream() // closes the handle when it ends or is destroyed
    },

    async remove (keys) {
      const results = await Promise.allSettled(keys.map(async (key) => { await rm(pathOf(key), { force: true }) }))
      return { failed: keys.filter((_key, i) => results[i]!.status === 'rejected') }
    },

    async probe () {
      // Uploads are written into .partial and renamed into the root: both must be there and writable.
      await access(partial, constants.R_OK | constants.W_OK | constants.X_OK)
      await access(root, constants.R_OK | constants.W_OK | constants.X_OK)
      // A disk that is full or read-only passes access(): a real write finds it, once a minute (and
      // on every round after one failed, since only a success is remembered).
      const now = performance.now()
      if (lastProbeWrite !== undefined && now - lastProbeWrite < PROBE_WRITE_EVERY_MS) return
      const file = join(partial, `probe-${randomBytes(6).toString('hex')}`)
      await writeFile(file, 'ok')
      try {
        if (await readFile(file, 'utf8') !== 'ok') throw new Error('storage probe read back wrong content')
      } finally {
        await rm(file, { force: true })
      }
      lastProbeWrite = now
    },

    async close () {}
  }
}

async function sweepStalePartials (dir: string, log: Logger): Promise<void> {
  try {
    const cutoff = Date.now() - STALE_PARTIAL_MS
    for await (const entry of await opendir(dir)) {
      const file = join(dir, entry.name)
      if ((await stat(file)).mtimeMs < cutoff) await rm(file, { force: true })
    }
  } catch (error) {
    log.warn({ err: error, dir }, 'could not sweep unfinished uploads')
  }
}

function ignore (): void {}
