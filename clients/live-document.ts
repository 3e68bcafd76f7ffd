// The OpenAPI document exactly as the app serves it: builds the app as it runs (embedded database
// in a scratch DATA_DIR) and reads GET /openapi.json. The web types (generate-web-types.ts) and the
// linters (lint-openapi.ts) read this, never a copy.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'

export async function liveDocument (): Promise<unknown> {
  const dataDir = mkdtempSync(join(tmpdir(), 'api-document-'))
  const app = await buildApp(loadConfig({ NODE_ENV: 'development', DATA_DIR: dataDir, LOG_LEVEL: 'silent', JWT_SECRET: 'api-types-only-api-types-only-api-types-only' }))
  try {
    const res = await app.inject({ method: 'GET', url: '/openapi.json' })
    if (res.statusCode !== 200) throw new Error(`GET /openapi.json answered ${res.statusCode}`)
    return res.json()
  } finally {
    await app.close()
    rmSync(dataDir, { recursive: true, force: true })
  }
}
