// Free-form JSON has a depth (issue 38 item 5, DECISIONS §17): every field that accepts any JSON —
// an installation's `settings` (install and change) and a widget's `settingsSchema` (create and
// change) — nests at most 32 levels; 33 is 400 `ValidationError` naming the field, and a 40 KB body
// of nested arrays (20,000 levels, which overflowed the stack of a recursive walk: a 500) is the same
// 400, in the field or as the whole body.
import t, { type Test } from 'tap'
import type { LightMyRequestResponse } from 'fastify'
import { startApp, uniqueClientIp } from './helpers/app.js'
import { startOidcProvider } from './helpers/oidc-provider.js'
import { signInPerson } from './helpers/people.js'
import { REST_ROUTES } from './helpers/rest-routes.js'

const provider = await startOidcProvider()
t.teardown(provider.close)
const s = await startApp({ OIDC_ISSUER: provider.issuer, OIDC_AUDIENCE: provider.audience })
t.teardown(s.close)
const adminToken = await provider.sign({ sub: `depth-admin-${Date.now()}`, roles: ['admin'] })

const LIMIT = 32
/** `levels` nested arrays as JSON text: `[[…]]`. */
const arrays = (levels: number): string => '['.repeat(levels) + ']'.repeat(levels)
/** An object nesting `levels` levels in all (the object itself is the first). */
const objectOfDepth = (levels: number): string => `{"a":${arrays(levels - 1)}}`
/** A valid JSON Schema nesting `levels` levels: arrays of arrays of … strings. */
const schemaOfDepth = (levels: number): string => levels === 1 ? '{"type":"string"}' : `{"type":"array","items":${schemaOfDepth(levels - 1)}}`
/** 40 KB of nested arrays: 20,480 levels. */
const HUGE = arrays(20_480)

async function admin (method: 'POST' | 'PATCH', url: string, body: string) {
  return await s.app.inject({
    method, url, payload: body, headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json', 'x-forwarded-for': uniqueClientIp() }
  })
}

const owner = await signInPerson(s, 'depth-owner')
const rest = async (method: 'POST' | 'PATCH', url: string, body: string) => await s.app.inject({
  method, url, payload: body, cookies: { app_session: owner.cookie }, headers: { 'content-type': 'application/json' }
})
const roomId = (await owner.rest('POST', '/api/rooms', { name: 'Depth room', isPublic: false })).json().data.id as string
const anything = await admin('POST', '/api/admin/widgets', '{"name":"Anything","settingsSchema":{"type":"object"}}')
const widgetId = anything.json().data.id as string
const installed = await rest('POST', `/api/rooms/${roomId}/widgets`, `{"widgetId":"${widgetId}","settings":{}}`)
const installationId = installed.json().data.id as string

function refused (t: Test, res: LightMyRequestResponse, field: string, label: string): void {
  t.equal(res.statusCode, 400, `${label}: 400 (${res.body.slice(0, 120)})`)
  t.equal(res.json().error, 'ValidationError', `${label}: ValidationError`)
  t.equal(res.json().details?.[0]?.field, field, `${label}: names ${field}`)
}

t.test('installation settings: 32 levels accepted, 33 and a 40 KB nest refused, on install and on change', async (t) => {
  const atLimit = await rest('POST', `/api/rooms/${roomId}/widgets`, `{"widgetId":"${widgetId}","settings":${objectOfDepth(LIMIT)}}`)
  t.equal(atLimit.statusCode, 201, atLimit.body.slice(0, 200))
  t.equal(JSON.stringify(atLimit.json().data.settings), objectOfDepth(LIMIT), 'stored and answered whole')
  refused(t, await rest('POST', `/api/rooms/${roomId}/widgets`, `{"widgetId":"${widgetId}","settings":${objectOfDepth(LIMIT + 1)}}`), 'settings', 'install, 33 levels')
  refused(t, await rest('POST', `/api/rooms/${roomId}/widgets`, `{"widgetId":"${widgetId}","settings":{"a":${HUGE}}}`), 'settings', 'install, 40 KB nest')
  refused(t, await rest('POST', `/api/rooms/${roomId}/widgets`, `{"widgetId":"${widgetId}","settings":${HUGE}}`), 'settings', 'install, settings a 40 KB nest')

  const url = `/api/rooms/${roomId}/widgets/${installationId}`
  t.equal((await rest('PATCH', url, `{"settings":${objectOfDepth(LIMIT)}}`)).statusCode, 200, 'change, 32 levels')
  refused(t, await rest('PATCH', url, `{"settings":${objectOfDepth(LIMIT + 1)}}`), 'settings', 'change, 33 levels')
  refused(t, await rest('PATCH', url, `{"settings":{"a":${HUGE}}}`), 'settings', 'change, 40 KB nest')
})

t.test('a widget\'s settings schema: 32 levels accepted (and used), 33 and a 40 KB nest refused, on create and on change', async (t) => {
  const created = await admin('POST', '/api/admin/widgets', `{"name":"Deep","settingsSchema":{"type":"object","properties":{"grid":${schemaOfDepth(LIMIT - 2)}}}}`)
  t.equal(created.statusCode, 201, created.body.slice(0, 200))
  const deepWidget = created.json().data.id as string
  const settings = `{"grid":${arrays(LIMIT - 3).replace(/\[\]/, '["x"]')}}`
  t.equal((await rest('POST', `/api/rooms/${roomId}/widgets`, `{"widgetId":"${deepWidget}","settings":${settings}}`)).statusCode, 201, 'settings at depth 30 checked against it')

  refused(t, await admin('POST', '/api/admin/widgets', `{"name":"Deeper","settingsSchema":${schemaOfDepth(LIMIT + 1)}}`), 'settingsSchema', 'create, 33 levels')
  refused(t, await admin('POST', '/api/admin/widgets', `{"name":"Huge","settingsSchema":{"items":${HUGE}}}`), 'settingsSchema', 'create, 40 KB nest')

  const url = `/api/admin/widgets/${deepWidget}`
  t.equal((await admin('PATCH', url, `{"settingsSchema":${schemaOfDepth(LIMIT)}}`)).statusCode, 200, 'change, 32 levels')
  refused(t, await admin('PATCH', url, `{"settingsSchema":${schemaOfDepth(LIMIT + 1)}}`), 'settingsSchema', 'change, 33 levels')
  refused(t, await admin('PATCH', url, `{"settingsSchema":{"items":${HUGE}}}`), 'settingsSchema', 'change, 40 KB nest')
})

t.test('a 40 KB nest anywhere else in a body is a 400, never a 500', async (t) => {
  const bodies = [
    { label: 'the whole body', body: HUGE },
    { label: 'an unknown property', body: `{"widgetId":"${widgetId}","settings":{},"extra":${HUGE}}` }
  ]
  for (const { label, body } of bodies) {
    const res = await rest('POST', `/api/rooms/${roomId}/widgets`, body)
    t.equal(res.statusCode, 400, `${label}: ${res.body.slice(0, 120)}`)
    t.equal(res.json().error, 'ValidationError', label)
  }
  // Every REST body: the nest as an extra property and as each free-form field's value.
  let sent = 0
  for (const route of REST_ROUTES.filter((r) => r.method === 'POST' || r.method === 'PATCH')) {
    const url = route.url.replace(':roomId', roomId).replace(/:\w+/, 'spark_x')
    const headers = { 'content-type': 'application/json', ...(url.startsWith('/api/admin/') ? { authorization: `Bearer ${adminToken}` } : {}) }
    for (const body of [`{"roomId":"${roomId}","extra":${HUGE}}`, `{"settings":${HUGE},"settingsSchema":${HUGE}}`]) {
      const res = await s.app.inject({ method: route.method, url, payload: body, cookies: { app_session: owner.cookie }, headers })
      sent++
      if (res.statusCode >= 500 || res.statusCode < 400) t.fail(`${route.method} ${route.url}: ${res.statusCode} ${res.body.slice(0, 120)}`)
    }
  }
  t.ok(sent > 50, `${sent} bodies to every POST and PATCH route, each refused with a 4xx`)
})
