// Lints the OpenAPI document the app serves (issue 39) with the two linters users run: Redocly CLI
// (its `recommended` rules) and Spectral (`spectral:oas`, .spectral.yaml). Fails on any error of
// either; the warnings left are explained in docs/api/conventions.md. Both run offline.
// `npm run api:lint` (CI runs it).
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { liveDocument } from './live-document.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const bin = (name: string): string => join(root, 'node_modules', '.bin', name)
const dir = mkdtempSync(join(tmpdir(), 'api-lint-'))
const file = join(dir, 'openapi.json')
writeFileSync(file, JSON.stringify(await liveDocument(), null, 2))

// No telemetry, no update check: CI has no network beyond the registries.
const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' }
const runs = [
  { name: 'Redocly (recommended)', command: bin('redocly'), args: ['lint', file, '--extends=recommended', '--format=stylish'] },
  { name: 'Spectral (spectral:oas)', command: bin('spectral'), args: ['lint', file, '--ruleset', join(root, '.spectral.yaml'), '--fail-severity=error'] }
]
let failed = false
for (const run of runs) {
  console.log(`\n--- ${run.name}`)
  const result = spawnSync(run.command, run.args, { env, stdio: 'inherit', cwd: dir })
  if (result.status !== 0) {
    failed = true
    console.error(`${run.name}: errors in GET /openapi.json (exit ${String(result.status ?? result.signal)})`)
  }
}
rmSync(dir, { recursive: true, force: true })
process.exit(failed ? 1 : 0)
