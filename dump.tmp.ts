import { buildApp } from './src/app.js'
import { loadConfig } from './src/config.js'
import { testEnv } from './test/helpers/app.js'
const app = await buildApp(loadConfig(testEnv()))
const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json()
console.log(Object.keys(doc.paths).join('\n'))
console.log(JSON.stringify(doc.paths['/api/rooms/{roomId}'], null, 1).slice(0, 1500), JSON.stringify(doc.components))
await app.close()
