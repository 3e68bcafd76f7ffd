// One widget's schema never affects another (issue 38 item 6): schemas are compiled by an Ajv of
// their own, so two widgets whose schemas share an `$id` (or a nested one) both work, a schema cannot
// `$ref` another widget's `$id`, and a schema compiled again after its validator was evicted from
// the bounded cache (past WIDGET_VALIDATORS_CACHED schemas) still compiles: its installs keep working.
import t from 'tap'
import { WIDGET_VALIDATORS_CACHED } from '../src/core/safety/widget-settings.js'
import { startApp, uniqueClientIp } from './helpers/app.js'
import { startOidcProvider } from './helpers/oidc-provider.js'
import { signInPerson } from './helpers/people.js'

const provider = await startOidcProvider()
t.teardown(provider.close)
const s = await startApp({ OIDC_ISSUER: provider.issuer, OIDC_AUDIENCE: provider.audience })
t.teardown(s.close)

const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
let adminCalls = 0
let adminToken = ''
/** Admin calls spread over several admins, each well inside the `write` tier. */
async function admin (method: 'POST' | 'PATCH', url: string, payload: object) {
  if (adminCalls++ % 50 === 0) adminToken = await provider.sign({ sub: `schemas-admin-${run}-${adminCalls}`, roles: ['admin'] })
  return await s.app.inject({ method, url, payload, headers: { authorization: `Bearer ${adminToken}`, 'x-forwarded-for': uniqueClientIp() } })
}

async function createWidget (name: string, settingsSchema: object): Promise<string> {
  const res = await admin('POST', '/api/admin/widgets', { name, settingsSchema })
  if (res.statusCode !== 201) throw new Error(`create ${name}: ${res.statusCode} ${res.body}`)
  return res.json().data.id
}

const owner = await signInPerson(s, 'schemas-owner')
const roomId = (await owner.rest('POST', '/api/rooms', { name: 'Schemas room', isPublic: false })).json().data.id as string
const install = async (widgetId: string, settings: object) => await owner.rest('POST', `/api/rooms/${roomId}/widgets`, { widgetId, settings })

const sharedId = `https://widgets.example.test/${run}/settings.json`
const colorSchema = { $id: sharedId, type: 'object', properties: { color: { type: 'string' } }, required: ['color'], additionalProperties: false }
const sizeSchema = { $id: sharedId, type: 'object', properties: { size: { type: 'integer' } }, required: ['size'], additionalProperties: false }

t.test('two widgets whose schemas share an $id each keep their own', async (t) => {
  const color = await createWidget('Color', colorSchema)
  const size = await createWidget('Size', sizeSchema)
  t.equal((await install(color, { color: 'red' })).statusCode, 201, 'the first checks its own schema')
  t.equal((await install(size, { size: 2 })).statusCode, 201, 'the second checks its own schema')
  const wrong = await install(size, { color: 'red' })
  t.equal(wrong.statusCode, 400, 'not the first widget\'s schema')
  t.same(wrong.json().details.map((d: { field: string }) => d.field).sort(), ['settings.color', 'settings.size'])

  const nested = (field: string) => ({ type: 'object', properties: { [field]: { $id: `${sharedId}#/inner`, type: 'string' } } })
  t.equal((await install(await createWidget('Nested one', nested('a')), { a: 'x' })).statusCode, 201, 'a nested $id')
  t.equal((await install(await createWidget('Nested two', nested('b')), { b: 'y' })).statusCode, 201, 'the same nested $id in another widget')

  const borrowing = await admin('POST', '/api/admin/widgets', { name: 'Borrower', settingsSchema: { $ref: sharedId } })
  t.equal(borrowing.statusCode, 400, 'a schema cannot $ref another widget\'s $id')
  t.equal(borrowing.json().details[0].field, 'settingsSchema')
})

t.test(`past ${WIDGET_VALIDATORS_CACHED} schemas: an evicted schema with an $id compiles again and its installs keep working`, async (t) => {
  const first = await createWidget('First', colorSchema)
  const installed = await install(first, { color: 'blue' })
  t.equal(installed.statusCode, 201)
  for (let i = 0; i <= WIDGET_VALIDATORS_CACHED; i++) {
    await createWidget(`Filler ${i}`, { $id: `https://widgets.example.test/${run}/filler-${i}.json`, type: 'object', properties: { [`f${i}`]: { type: 'integer' } } })
  }
  t.equal((await install(first, { color: 'green' })).statusCode, 201, 'installed again after its validator was evicted')
  const changed = await owner.rest('PATCH', `/api/rooms/${roomId}/widgets/${installed.json().data.id as string}`, { settings: { color: 'teal' } })
  t.equal(changed.statusCode, 200, changed.body)
  t.equal((await install(first, { colour: 'green' })).statusCode, 400, 'still checked against its schema')
  const again = await admin('PATCH', `/api/admin/widgets/${first}`, { settingsSchema: { ...colorSchema, description: 'changed' } })
  t.equal(again.statusCode, 200, `its schema changed, same $id: ${again.body.slice(0, 200)}`)
})
