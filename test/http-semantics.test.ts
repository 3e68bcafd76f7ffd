// HTTP semantics where the REST API has them (DECISIONS §17, issue 39.7; REST only, RPC keeps its
// codes): a stale If-Match is 412 PreconditionFailed; a GET whose If-None-Match matches the current
// ETag is 304 with no body; a 201 carries Location, the new resource's URL (which answers); a body
// in a media type the route does not read is 415 UnsupportedMediaType, never a validation error.
import t from 'tap'
import { randomUUID } from 'node:crypto'
import { startApp } from './helpers/app.js'
import { signInPerson } from './helpers/people.js'

const s = await startApp()
t.teardown(s.close)
const owner = await signInPerson(s, 'semantics')
const room = (await owner.rest('POST', '/api/rooms', { name: 'Semantics', isPublic: true })).json().data as { id: string }

t.test('a stale If-Match is 412 PreconditionFailed, naming the current version', async (t) => {
  const spark = (await owner.rest('POST', '/api/sparks', { roomId: room.id, title: 'v1', x: 0, y: 0 })).json().data as { id: string }
  t.equal((await owner.rest('PATCH', `/api/sparks/${spark.id}`, { title: 'v2' }, { 'if-match': '"1"' })).statusCode, 200)
  const stale = await owner.rest('PATCH', `/api/sparks/${spark.id}`, { title: 'lost' }, { 'if-match': '"1"' })
  t.equal(stale.statusCode, 412)
  t.equal(stale.json().error, 'PreconditionFailed')
  t.match(stale.json().message, /version 2/)
})

t.test('If-None-Match: 304 with no body while the ETag is current, 200 once it changed', async (t) => {
  const spark = (await owner.rest('POST', '/api/sparks', { roomId: room.id, title: 'cached', x: 0, y: 0 })).json().data as { id: string }
  const first = await owner.rest('GET', `/api/sparks/${spark.id}`)
  const etag = first.headers.etag as string
  t.equal(etag, '"1"')
  for (const condition of [etag, `W/${etag}`, `"9", ${etag}`, '*']) {
    const cached = await owner.rest('GET', `/api/sparks/${spark.id}`, undefined, { 'if-none-match': condition })
    t.equal(cached.statusCode, 304, `If-None-Match: ${condition}`)
    t.equal(cached.body, '', 'no body')
    t.equal(cached.headers.etag, etag, 'the ETag is repeated')
  }
  t.equal((await owner.rest('GET', `/api/sparks/${spark.id}`, undefined, { 'if-none-match': '"7"' })).statusCode, 200, 'another version: the spark')
  await owner.rest('PATCH', `/api/sparks/${spark.id}`, { title: 'changed' })
  const changed = await owner.rest('GET', `/api/sparks/${spark.id}`, undefined, { 'if-none-match': etag })
  t.equal(changed.statusCode, 200, 'a changed spark is sent again')
  t.equal(changed.headers.etag, '"2"')
  const file = await s.app.inject({ method: 'POST', url: '/api/uploads', cookies: { app_session: owner.cookie }, headers: { 'content-type': 'multipart/form-data; boundary=b' }, payload: '--b\r\nContent-Disposition: form-data; name="type"\r\n\r\nattachment\r\n--b\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nhello\r\n--b--\r\n' })
  const fileId = (file.json().data as { id: string }).id
  const bytes = await owner.rest('GET', `/api/uploads/${fileId}`)
  t.equal((await owner.rest('GET', `/api/uploads/${fileId}`, undefined, { 'if-none-match': bytes.headers.etag as string })).statusCode, 304, 'a file too')
})

t.test('a 201 carries Location, the URL of what it created, and that URL answers', async (t) => {
  const key = randomUUID()
  const created = await owner.rest('POST', '/api/rooms', { name: 'Located' }, { 'idempotency-key': key })
  const id = (created.json().data as { id: string }).id
  t.equal(created.statusCode, 201)
  t.equal(created.headers.location, `/api/rooms/${id}`)
  t.equal((await owner.rest('GET', created.headers.location as string)).statusCode, 200, 'the Location answers')
  const replayed = await owner.rest('POST', '/api/rooms', { name: 'Located' }, { 'idempotency-key': key })
  t.equal(replayed.headers.location, created.headers.location, 'a replayed 201 carries the same Location')

  const spark = await owner.rest('POST', '/api/sparks', { roomId: room.id, title: 'located', x: 0, y: 0 })
  t.equal(spark.headers.location, `/api/sparks/${(spark.json().data as { id: string }).id}`)
  const shelf = await owner.rest('POST', '/api/shelves', { name: 'Located' })
  const shelfId = (shelf.json().data as { id: string }).id
  t.equal(shelf.headers.location, `/api/shelves/${shelfId}`)
  const link = await owner.rest('POST', `/api/shelves/${shelfId}/links`, { url: 'https://example.com/' })
  t.equal(link.headers.location, `/api/shelves/${shelfId}/links/${(link.json().data as { id: string }).id}`, 'a nested create: the path parameters filled in')
  const skill = await owner.rest('POST', '/api/passport/skills', { name: 'Go' })
  t.equal(skill.headers.location, `/api/passport/skills/${(skill.json().data as { id: string }).id}`)
  const attachment = await s.app.inject({ method: 'POST', url: '/api/attachments', cookies: { app_session: owner.cookie }, headers: { 'content-type': 'multipart/form-data; boundary=b' }, payload: '--b\r\nContent-Disposition: form-data; name="file"; filename="n.txt"\r\nContent-Type: text/plain\r\n\r\nnotes\r\n--b--\r\n' })
  t.equal(attachment.statusCode, 201)
  t.equal(attachment.headers.location, `/api/uploads/${(attachment.json().data as { id: string }).id}`, 'an attachment lives under /api/uploads')
  t.equal((await owner.rest('GET', attachment.headers.location as string)).statusCode, 200)
  t.notOk((await owner.rest('GET', `/api/rooms/${room.id}`)).headers.location, 'no Location on other answers')
})

t.test('a body in a media type the route does not read is 415 UnsupportedMediaType', async (t) => {
  const post = async (url: string, method: 'POST' | 'PATCH', type: string, payload: string) => await s.app.inject({ method, url, cookies: { app_session: owner.cookie }, headers: { 'content-type': type }, payload })
  for (const [url, method, type, payload] of [
    ['/api/rooms', 'POST', 'text/plain', 'a room'],
    ['/api/rooms', 'POST', 'application/xml', '<room/>'],
    ['/api/rooms', 'POST', 'application/x-www-form-urlencoded', 'name=x'],
    [`/api/rooms/${room.id}`, 'PATCH', 'text/plain', 'x'],
    ['/api/uploads', 'POST', 'application/json', '{"type":"attachment"}'],
    ['/api/cv/parse', 'POST', 'text/plain', 'my CV']
  ] as const) {
    const answer = await post(url, method, type, payload)
    t.equal(answer.statusCode, 415, `${method} ${url} with ${type}`)
    t.equal(answer.json().error, 'UnsupportedMediaType')
  }
  t.equal((await post('/api/rooms', 'POST', 'application/json; charset=utf-8', '{"name":"json"}')).statusCode, 201, 'JSON, with its charset, is read')
})
