// Local-disk file storage under DATA_DIR/uploads (the embedded default).
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'

export interface Storage {
  readonly root: string
  /** Writes, reads back and removes a probe file: the health check of the storage part. */
  probe (): Promise<void>
}

export async function createStorage (dataDir: string): Promise<Storage> {
  const root = join(dataDir, 'uploads')
  await mkdir(root, { recursive: true })
  return {
    root,
    probe: async () => {
      const file = join(root, `.probe-${randomBytes(6).toString('hex')}`)
      await writeFile(file, 'ok')
      try {
        if (await readFile(file, 'utf8') !== 'ok') throw new Error('storage probe read back wrong content')
      } finally {
        await rm(file, { force: true })
      }
    }
  }
}
