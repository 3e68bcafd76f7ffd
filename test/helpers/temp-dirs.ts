// Where test files put their temporary folders: a memory-backed file system when the machine has one
// (Linux's /dev/shm), else the system's temporary folder; TEST_TMPDIR names another. Every app a test
// starts gets a copy of a migrated embedded database (database-template.ts), some 1,100 files: on a
// disk, creating them costs a second of kernel time per app, in memory a few tens of milliseconds.
import { accessSync, constants, mkdtempSync, rmSync, statfsSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** Room for the test files running at once, each with a few copies of the 40 MB template (a
 *  container's default /dev/shm is 64 MB: too small, so the disk is used there). */
const NEEDED_BYTES = 2 * 1024 ** 3

function memoryBacked (): string | undefined {
  try {
    if (!statSync('/dev/shm').isDirectory()) return undefined
    accessSync('/dev/shm', constants.W_OK)
    const space = statfsSync('/dev/shm')
    return space.bavail * space.bsize >= NEEDED_BYTES ? '/dev/shm' : undefined
  } catch {
    return undefined
  }
}

export const scratchRoot = process.env.TEST_TMPDIR ?? memoryBacked() ?? tmpdir()

const temporaryDirs: string[] = []
process.on('exit', () => { for (const dir of temporaryDirs) rmSync(dir, { recursive: true, force: true }) })

/** A new, empty folder under `scratchRoot`, removed when the test process exits. */
export function temporaryDir (prefix = 'canvas-test-'): string {
  const dir = mkdtempSync(join(scratchRoot, prefix))
  temporaryDirs.push(dir)
  return dir
}
