// `npm run migrate`: applies pending migrations to the configured database, then exits.
import { loadConfig } from '../config.js'
import { openDatabase } from './database.js'

const config = loadConfig()
const handle = await openDatabase(config)
console.log(`migrations applied (${handle.kind})`)
await handle.close()
