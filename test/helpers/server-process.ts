// The service as a process of its own (`src/server.ts`: configuration, listen, SIGTERM), for the
// tests of what only a process shows: start-up refusals, signals, the exit code, logs at info.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { migratedDataDir } from './database-template.js'

export interface ServerProcess { child: ChildProcessWithoutNullStreams, url: string, exited: Promise<number | null> }

/** The environment of such a process: a fresh DATA_DIR (its embedded database migrated), logs at
 *  info as in production, a free port. */
export const serverEnv = (): NodeJS.ProcessEnv => ({
  ...process.env,
  DATA_DIR: migratedDataDir('canvas-process-'),
  LOG_LEVEL: 'info',
  HOST: '127.0.0.1',
  PORT: '0'
})

/** Starts the server (by default the built one, `dist/src/server.js`, as `npm start` runs it) and
 *  resolves once it listens. */
export async function startServer (extra: NodeJS.ProcessEnv, entry: string[] = ['--enable-source-maps', 'dist/src/server.js']): Promise<ServerProcess> {
  const child = spawn(process.execPath, entry, { env: { ...serverEnv(), ...extra } })
  const url = await new Promise<string>((resolve, reject) => {
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out)
      if (match?.[1] !== undefined) resolve(match[1])
    })
    child.on('exit', (code) => { reject(new Error(`exited early with ${String(code)}`)) })
  })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => { resolve(code) }))
  return { child, url, exited }
}
