// The service's version, from its package.json (above src/, or above dist/src/ when built), so
// `node dist/src/server.js` knows it without npm: told to clients (GetConfig) and to trace backends
// (the resource's `service.version`).
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

export function packageVersion (): string {
  const candidates = [join(import.meta.dirname, '..', '..', 'package.json'), join(import.meta.dirname, '..', '..', '..', 'package.json')]
  const file = candidates.find((path) => existsSync(path)) ?? candidates[0]!
  try {
    const { version } = JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown }
    return typeof version === 'string' ? version : '0.0.0'
  } catch {
    return '0.0.0'
  }
}
