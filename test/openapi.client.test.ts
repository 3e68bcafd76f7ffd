// The OpenAPI document says what the server answers (issue 39.2): a client generated from GET
// /openapi.json by a generator the project does not otherwise use (@hey-api/openapi-ts, into a
// temporary directory) calls every operation it can against the running app over real HTTP, signed
// in, and every answer is checked against the document: its status is declared (explicitly, not
// through `default`), its body validates with ajv against the declared schema with
// `additionalProperties: false` forced on every object, and every API header it carries (ETag,
// Location, Idempotent-Replayed, X-Request-Id, the rate-limit headers, Retry-After) is declared.
import t from 'tap'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { randomBytes, randomUUID } from 'node:crypto'
import { createClient as generateClient } from '@hey-api/openapi-ts'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import { lastMailTo, startApp, uniqueClientIp, uniqueEmail } from './helpers/app.js'
import { startOidcProvider } from './helpers/oidc-provider.js'
import { signInWithCookie } from './helpers/sign-in.js'
import { temporaryDir } from './helpers/temp-dirs.js'

type Json = Record<string, unknown>
interface Answer { data?: unknown, error?: unknown, response: Response }
type Call = (options?: Json) => Promise<Answer>
interface GeneratedClient { interceptors: { response: { use: (fn: (response: Response, request: Request) => Promise<Response>) => number } } }

const provider = await startOidcProvider()
t.teardown(provider.close)
const s = await startApp({ OIDC_ISSUER: provider.issuer, OIDC_AUDIENCE: provider.audience, RTC_APP_ID: randomBytes(16).toString('hex'), RTC_APP_CERTIFICATE: randomBytes(16).toString('hex') })
t.teardown(s.close)

const doc = await (await fetch(`${s.url}/openapi.json`)).json() as Json
const dir = temporaryDir('openapi-client-')
t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
await generateClient({ input: doc, output: { path: dir }, plugins: ['@hey-api/client-fetch', '@hey-api/typescript', '@hey-api/sdk'], logs: { level: 'silent' } } as Parameters<typeof generateClient>[0])
const sdk = await import(pathToFileURL(join(dir, 'sdk.gen.ts')).href) as Record<string, Call>
const { createClient, createConfig } = await import(pathToFileURL(join(dir, 'client', 'index.ts')).href) as { createClient: (config: unknown) => GeneratedClient, createConfig: (config: Json) => unknown }

// The document with additionalProperties: false forced on every object schema.
function strict (schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(strict)
  if (typeof schema !== 'object' || schema === null) return schema
  const copy: Json = {}
  for (const [key, value] of Object.entries(schema)) {
    copy[key] = key === '$ref' && typeof value === 'string' ? value.replace('#/components/', 'doc#/components/') : strict(value)
  }
  if (copy.properties !== undefined && (copy.additionalProperties === undefined || copy.additionalProperties === true)) copy.additionalProperties = false
  return copy
}
const ajv = new Ajv2020({ strict: false, allErrors: true })
const addFormats = addFormatsModule as unknown as (instance: Ajv2020) => void
addFormats(ajv)
ajv.addFormat('binary', true)
ajv.addSchema({ $id: 'doc', components: strict(doc.components) as Json })

const paths = doc.paths as Record<string, Record<string, Json>>
// A static path before a template that also matches it (`/api/users/avatar` before `/api/users/{userId}`).
const templates = Object.keys(paths).sort((a, b) => a.split('{').length - b.split('{').length).map((path) => ({ path, pattern: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`) }))
const API_HEADERS = ['etag', 'location', 'idempotent-replayed', 'x-request-id', 'retry-after', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']

const called = new Map<string, Set<number>>()
const problems: string[] = []

/** Checks one answer against the document. */
async function check (response: Response, method: string, url: string): Promise<void> {
  const pathname = new URL(url).pathname
  const template = templates.find((candidate) => candidate.pattern.test(pathname))
  const operation = template === undefined ? undefined : paths[template.path]?.[method.toLowerCase()]
  const label = `${method} ${pathname} → ${response.status}`
  if (operation === undefined) { problems.push(`${label}: no operation in the document`); return }
  const id = operation.operationId as string
  called.set(id, (called.get(id) ?? new Set()).add(response.status))
  const declared = (operation.responses as Record<string, Json>)[String(response.status)]
  if (declared === undefined) { problems.push(`${label} (${id}): status not declared`); return }
  const headers = Object.keys((declared.headers ?? {}) as Json).map((name) => name.toLowerCase())
  for (const name of API_HEADERS) if (response.headers.has(name) && !headers.includes(name)) problems.push(`${label} (${id}): header ${name} not declared`)
  const content = declared.content as Record<string, Json> | undefined
  const type = response.headers.get('content-type')?.split(';')[0]?.trim()
  if (content === undefined) {
    const body = await response.clone().text()
    if (body !== '') problems.push(`${label} (${id}): a body where none is declared`)
    return
  }
  const media = content[type ?? ''] ?? content['*/*']
  if (media === undefined) { problems.push(`${label} (${id}): media type ${type ?? '(none)'} not declared (${Object.keys(content).join(', ')})`); return }
  if (type !== 'application/json') return
  const validate = ajv.compile(strict(media.schema) as Json)
  const body: unknown = await response.clone().json()
  if (!validate(body)) problems.push(`${label} (${id}): ${ajv.errorsText(validate.errors)} in ${JSON.stringify(body).slice(0, 300)}`)
}

/** A generated client for one caller: the session cookie, or an admin's access token. */
function clientFor (credential: { cookie?: string, token?: string } = {}): GeneratedClient {
  const client = createClient(createConfig({
    baseUrl: s.url,
    // Each caller counts from its own address (the app trusts its loopback peer's X-Forwarded-For).
    headers: { 'x-forwarded-for': uniqueClientIp() },
    auth: (auth: { scheme?: string }) => auth.scheme === 'bearer' ? credential.token : credential.cookie
  }))
  client.interceptors.response.use(async (response, request) => { await check(response, request.method, request.url); return response })
  return client
}

const anonymous = clientFor()
async function call (client: GeneratedClient, name: string, options: Json = {}): Promise<Answer> {
  const fn = sdk[name]
  if (fn === undefined) throw new Error(`the generated client has no ${name}`)
  return await fn({ client, ...options })
}
function dataOf<T = Json> (answer: Answer): T {
  if (answer.data === undefined) throw new Error(`expected data: ${answer.response.status} ${JSON.stringify(answer.error)}`)
  return (answer.data as { data: T }).data
}

t.test('every operation the generated client can call answers as the document says', async (t) => {
  // Signing in through the generated client itself: request a link, open it, keep the cookie.
  const email = uniqueEmail('generated')
  t.equal((await call(anonymous, 'authRequestLogin', { body: { email } })).response.status, 200)
  const opened = await call(anonymous, 'authOpenSignInLink', { query: { token: lastMailTo(s.config, email).token }, redirect: 'manual' })
  const cookie = /app_session=([^;]+)/.exec(opened.response.headers.get('set-cookie') ?? '')?.[1]
  t.equal(opened.response.status, 302, 'the sign-in link redirects')
  t.ok(cookie, 'the sign-in link set the session cookie')
  const owner = clientFor({ cookie })
  const me = dataOf<{ id: string }>(await call(owner, 'authGetMe'))
  const other = await signInWithCookie(s)
  const bystander = clientFor({ cookie: other.cookie })
  const offender = await signInWithCookie(s)
  const offenderClient = clientFor({ cookie: offender.cookie })
  const admin = clientFor({ token: await provider.sign({ sub: `root-${randomUUID()}`, roles: ['super_admin'] }) })

  await call(anonymous, 'healthCheck')
  await call(anonymous, 'roomsListRooms')
  await call(anonymous, 'authOpenSignInLink', { query: { token: 'x'.repeat(43) }, redirect: 'manual' })

  // Rooms, and a create retried with its Idempotency-Key.
  const key = randomUUID()
  const room = dataOf<{ id: string }>(await call(owner, 'roomsCreateRoom', { body: { name: 'Generated', isPublic: true }, headers: { 'Idempotency-Key': key } }))
  const replayed = await call(owner, 'roomsCreateRoom', { body: { name: 'Generated', isPublic: true }, headers: { 'Idempotency-Key': key } })
  t.equal(replayed.response.headers.get('idempotent-replayed'), 'true', 'the retry is replayed')
  t.equal(replayed.response.headers.get('location'), `/api/rooms/${room.id}`, 'a 201 carries Location')
  await call(owner, 'roomsCreateRoom', { body: { name: 'Other body', isPublic: true }, headers: { 'Idempotency-Key': key } })
  await call(owner, 'roomsCreateRoom', { body: { name: '' } })
  await call(owner, 'roomsListRooms')
  await call(owner, 'roomsGetRoom', { path: { roomId: room.id } })
  await call(owner, 'roomsGetRoom', { path: { roomId: 'no-such-room' } })
  await call(owner, 'roomsUpdateRoom', { path: { roomId: room.id }, body: { description: 'described' } })
  await call(bystander, 'roomsUpdateRoom', { path: { roomId: room.id }, body: { description: 'not mine' } })

  // Sparks: ETag, If-None-Match, If-Match.
  const spark = dataOf<{ id: string }>(await call(owner, 'sparksCreateSpark', { body: { roomId: room.id, title: 'A spark', x: 0, y: 0 } }))
  const read = await call(owner, 'sparksGetSpark', { path: { sparkId: spark.id } })
  t.equal((await call(owner, 'sparksGetSpark', { path: { sparkId: spark.id }, headers: { 'If-None-Match': read.response.headers.get('etag') } })).response.status, 304)
  await call(owner, 'sparksUpdateSpark', { path: { sparkId: spark.id }, body: { title: 'Edited' }, headers: { 'if-match': '"1"' } })
  t.equal((await call(owner, 'sparksUpdateSpark', { path: { sparkId: spark.id }, body: { title: 'Stale' }, headers: { 'if-match': '"1"' } })).response.status, 412)
  await call(owner, 'sparksListSparks', { query: { roomId: room.id } })
  await call(owner, 'sparksListSparks', { query: { roomId: 'no-such-room' } })
  await call(owner, 'sparksMoveSpark', { path: { sparkId: spark.id }, body: { x: 40, y: 40 } })

  // Canvas.
  await call(owner, 'canvasUpdatePosition', { body: { tileId: spark.id, x: 80, y: 80 } })
  await call(owner, 'canvasBatchUpdatePositions', { body: { updates: [{ tileId: spark.id, x: 120, y: 120 }] } })
  await call(owner, 'canvasComputeLayout', { body: { roomId: room.id, algorithm: 'grid' } })
  await call(owner, 'canvasValidateLayout', { body: { roomId: room.id } })
  await call(owner, 'canvasGetCanvasState', { query: { roomId: room.id } })
  await call(owner, 'canvasMoveCursor', { body: { roomId: room.id, x: 1, y: 2 } })
  await call(owner, 'canvasLeaveCanvas', { body: { roomId: room.id } })
  await call(owner, 'canvasReportPresence', { body: { roomId: room.id } })
  await call(owner, 'canvasGetPresence', { query: { roomId: room.id } })
  await call(owner, 'canvasGetPresence', { query: { roomId: 'no-such-room' } })

  // Offices, members and invitations.
  const slug = `gen-${randomUUID().slice(0, 8)}`
  const office = dataOf<{ id: string }>(await call(owner, 'officesCreateOffice', { body: { name: 'Generated office', slug } }))
  await call(owner, 'officesCreateOffice', { body: { name: 'Same slug', slug } })
  await call(owner, 'officesListOffices')
  await call(owner, 'officesGetOffice', { path: { officeId: office.id } })
  await call(owner, 'officesUpdateOffice', { path: { officeId: office.id }, body: { description: 'described' } })
  await call(owner, 'officesInviteToOffice', { path: { officeId: office.id }, body: { email: other.email, role: 'member' } })
  const stranger = uniqueEmail('stranger')
  const invite = dataOf<{ id: string }>(await call(owner, 'officesInviteToOffice', { path: { officeId: office.id }, body: { email: stranger, role: 'member' } }))
  await call(owner, 'officesListInvites', { path: { officeId: office.id } })
  const inviteToken = lastMailTo(s.config, other.email).token
  await call(anonymous, 'officesGetInviteInfo', { path: { token: inviteToken } })
  await call(bystander, 'officesAcceptInvite', { body: { token: inviteToken } })
  await call(bystander, 'officesAcceptInvite', { body: { token: inviteToken } })
  await call(owner, 'officesListMembers', { path: { officeId: office.id } })
  await call(owner, 'officesUpdateMemberRole', { path: { officeId: office.id, userId: other.userId }, body: { role: 'admin' } })
  await call(owner, 'officesRemoveMember', { path: { officeId: office.id, userId: me.id } })
  await call(owner, 'officesRemoveMember', { path: { officeId: office.id, userId: other.userId } })
  await call(owner, 'officesCancelInvite', { path: { officeId: office.id, inviteId: invite.id } })
  await call(owner, 'officesDeleteOffice', { path: { officeId: office.id } })

  // Users and uploads (multipart forms, `type` before `file`).
  await call(owner, 'usersSearchUsers', { query: { q: 'us' } })
  await call(owner, 'usersUpdateProfile', { body: { displayName: 'Generated Owner' } })
  await call(owner, 'usersGetDisplayInfo', { query: { ids: `${me.id},${other.userId}` } })
  await call(owner, 'usersGetUser', { path: { userId: me.id } })
  await call(owner, 'usersGetUser', { path: { userId: other.userId } })
  const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64')
  await call(owner, 'usersUploadAvatar', { body: { file: new Blob([png], { type: 'image/png' }) } })
  const upload = dataOf<{ id: string }>(await call(owner, 'uploadsUpload', { body: { type: 'attachment', file: new Blob(['hello'], { type: 'text/plain' }) } }))
  const attached = await call(owner, 'uploadsAttach', { body: { file: new Blob(['notes'], { type: 'text/plain' }) } })
  t.match(attached.response.headers.get('location'), /^\/api\/uploads\//, 'an attachment is an upload: its Location')
  await call(owner, 'uploadsUpload', { body: { file: new Blob(['no type'], { type: 'text/plain' }) } })
  const file = await call(owner, 'uploadsGet', { path: { fileId: upload.id }, parseAs: 'text' })
  await call(owner, 'uploadsGet', { path: { fileId: upload.id }, headers: { 'If-None-Match': file.response.headers.get('etag') }, parseAs: 'text' })
  await call(owner, 'uploadsDelete', { path: { fileId: upload.id } })
  await call(owner, 'uploadsGet', { path: { fileId: upload.id }, parseAs: 'text' })

  // Video/voice, shelves, passport.
  await call(owner, 'rtcGetConfig')
  await call(owner, 'rtcGenerateToken', { body: { channelName: room.id, uid: '7' } })
  await call(owner, 'rtcGenerateToken', { body: { channelName: 'no-such-room', uid: '7' } })
  const shelf = dataOf<{ id: string }>(await call(owner, 'shelvesCreateShelf', { body: { name: 'Links' } }))
  await call(owner, 'shelvesListShelves')
  await call(owner, 'shelvesUpdateShelf', { path: { shelfId: shelf.id }, body: { isPublic: true } })
  const first = dataOf<{ id: string }>(await call(owner, 'shelvesAddLink', { path: { shelfId: shelf.id }, body: { url: 'https://example.com/a' } }))
  await call(owner, 'shelvesAddLink', { path: { shelfId: shelf.id }, body: { url: 'https://example.com/b' } })
  await call(owner, 'shelvesMoveLink', { path: { shelfId: shelf.id, linkId: first.id }, body: {} })
  await call(owner, 'shelvesGetShelf', { path: { shelfId: shelf.id } })
  await call(owner, 'shelvesRemoveLink', { path: { shelfId: shelf.id, linkId: first.id } })
  await call(owner, 'shelvesDeleteShelf', { path: { shelfId: shelf.id } })
  await call(owner, 'passportGetPassport')
  await call(owner, 'passportUpdatePassport', { body: { headline: 'Engineer', isPublic: true } })
  const skill = dataOf<{ id: string }>(await call(owner, 'passportAddSkill', { body: { name: 'TypeScript', level: 4 } }))
  await call(owner, 'passportAddSkill', { body: { name: 'TypeScript' } })
  await call(owner, 'passportRemoveSkill', { path: { skillId: skill.id } })
  const job = dataOf<{ id: string }>(await call(owner, 'passportAddExperience', { body: { title: 'Engineer', company: 'Acme', startDate: '2020-01' } }))
  await call(owner, 'passportUpdateExperience', { path: { experienceId: job.id }, body: { endDate: '2022-06' } })
  await call(owner, 'passportDeleteExperience', { path: { experienceId: job.id } })
  await call(bystander, 'passportGetPassportByUserId', { path: { userId: me.id } })
  const cv = new Blob(['Jane Doe\nSenior Engineer\nSkills: TypeScript, PostgreSQL\nExperience\nEngineer at Acme 2019-01 - 2021-02\n'], { type: 'text/plain' })
  await call(owner, 'passportParseCv', { body: { file: cv } })
  await call(owner, 'passportImportCv', { body: { file: cv } })

  // Trust and safety, and administration by the provider's token.
  const offenderRoom = dataOf<{ id: string }>(await call(offenderClient, 'roomsCreateRoom', { body: { name: 'Offending', isPublic: true } }))
  await call(owner, 'reportsCreateReport', { body: { targetType: 'room', targetId: offenderRoom.id, reason: 'spam' } })
  await call(owner, 'reportsCreateReport', { body: { targetType: 'room', targetId: offenderRoom.id, reason: 'spam' } })
  await call(owner, 'reportsListReports')
  await call(owner, 'motdGetMotd')
  await call(owner, 'widgetsListWidgets')
  await call(owner, 'safetyClassify', { body: { text: 'hello there' } })
  await call(admin, 'adminListUsers')
  await call(admin, 'adminGetUser', { path: { userId: offender.userId } })
  await call(admin, 'adminListRooms')
  await call(admin, 'adminGetRoom', { path: { roomId: offenderRoom.id } })
  const reports = dataOf<Array<{ id: string, targetId: string }>>(await call(admin, 'adminListReports'))
  const report = reports.find((r) => r.targetId === offenderRoom.id)
  t.ok(report, 'the report reaches the admins')
  await call(admin, 'adminGetReport', { path: { reportId: report?.id ?? '' } })
  const resolution = dataOf<{ action: { id: string } }>(await call(admin, 'adminResolveReport', { path: { reportId: report?.id ?? '' }, body: { action: 'suspend', note: 'spam' } }))
  await call(admin, 'adminResolveReport', { path: { reportId: report?.id ?? '' }, body: { action: 'dismiss' } })
  await call(offenderClient, 'roomsListRooms')
  // A suspension ends the account's sessions: a suspended user signs in again to read why and appeal.
  const suspended = clientFor({ cookie: (await signInWithCookie(s, offender.email)).cookie })
  await call(suspended, 'roomsListRooms')
  const inbox = dataOf<Array<{ id: string }>>(await call(suspended, 'messagesListMessages'))
  await call(suspended, 'messagesMarkRead', { path: { messageId: inbox[0]?.id ?? 'none' } })
  await call(suspended, 'appealsCreateAppeal', { body: { actionId: resolution.action.id, text: 'It was not spam.' } })
  await call(suspended, 'appealsListAppeals')
  const appeals = dataOf<Array<{ id: string, actionId: string }>>(await call(admin, 'adminListAppeals'))
  const appeal = appeals.find((a) => a.actionId === resolution.action.id)
  await call(admin, 'adminDecideAppeal', { path: { appealId: appeal?.id ?? '' }, body: { decision: 'upheld' } })
  await call(admin, 'adminUnsuspendUser', { path: { userId: offender.userId }, body: { note: 'second chance' } })
  await call(admin, 'adminUnsuspendUser', { path: { userId: offender.userId } })
  await call(suspended, 'messagesDeleteMessage', { path: { messageId: inbox[0]?.id ?? 'none' } })
  const motd = dataOf<{ id: string }>(await call(admin, 'adminCreateMotd', { body: { text: 'Maintenance tonight', severity: 'info', startsAt: new Date(Date.now() - 1000).toISOString(), endsAt: new Date(Date.now() + 3_600_000).toISOString() } }))
  await call(admin, 'adminUpdateMotd', { path: { motdId: motd.id }, body: { severity: 'warning' } })
  await call(owner, 'motdGetMotd')
  const widget = dataOf<{ id: string }>(await call(admin, 'adminCreateWidget', { body: { name: `Clock ${randomUUID().slice(0, 6)}`, settingsSchema: { type: 'object', properties: { zone: { type: 'string' } }, additionalProperties: false } } }))
  await call(admin, 'adminUpdateWidget', { path: { widgetId: widget.id }, body: { description: 'Shows the time' } })
  const installed = dataOf<{ id: string }>(await call(owner, 'widgetsInstallWidget', { path: { roomId: room.id }, body: { widgetId: widget.id, settings: { zone: 'UTC' } } }))
  await call(owner, 'widgetsListInstallations', { path: { roomId: room.id } })
  await call(owner, 'widgetsUpdateInstallation', { path: { roomId: room.id, installationId: installed.id }, body: { settings: { zone: 'CET' } } })
  await call(owner, 'widgetsUpdateInstallation', { path: { roomId: room.id, installationId: installed.id }, body: { settings: { zone: 3 } } })
  await call(owner, 'widgetsRemoveInstallation', { path: { roomId: room.id, installationId: installed.id } })
  await call(admin, 'adminDeleteWidget', { path: { widgetId: widget.id } })
  await call(admin, 'adminListAudit')
  await call(admin, 'adminDeleteRoom', { path: { roomId: offenderRoom.id } })
  await call(anonymous, 'adminListUsers')
  await call(owner, 'sparksDeleteSpark', { path: { sparkId: spark.id } })
  await call(owner, 'roomsDeleteRoom', { path: { roomId: room.id } })

  // The event stream: its generated function reads the stream itself, so it is opened with fetch and checked the same way.
  const aborting = new AbortController()
  const stream = await fetch(`${s.url}/api/sync/subscribe`, { headers: { cookie: `app_session=${cookie ?? ''}` }, signal: aborting.signal })
  t.equal(stream.headers.get('content-type'), 'text/event-stream')
  const streamHeaders = new Response(null, { status: stream.status, headers: stream.headers })
  await check(streamHeaders, 'GET', stream.url)
  aborting.abort()
  await call(anonymous, 'syncSubscribe', { sseMaxRetryAttempts: 1, onSseError: () => {} }).catch(() => {})

  // Account deletion and sign-out last.
  const leaver = await signInWithCookie(s)
  const leaverClient = clientFor({ cookie: leaver.cookie })
  await call(leaverClient, 'authRequestDeletion')
  await call(anonymous, 'authConfirmDeletion', { body: { token: lastMailTo(s.config, leaver.email).token } })
  await call(anonymous, 'authConfirmDeletion', { body: { token: lastMailTo(s.config, leaver.email).token } })
  await call(owner, 'authLogout')
  await call(owner, 'authGetMe')

  t.same(problems, [], 'every answer is declared: status, body and headers')
  const operations = Object.values(paths).flatMap((item) => Object.values(item).map((op) => op.operationId as string))
  t.same(operations.filter((id) => !called.has(id)), [], 'every operation of the document was called')
  const answered = [...called.values()].reduce((sum, statuses) => sum + statuses.size, 0)
  t.ok(answered > operations.length, `${answered} distinct answers of ${operations.length} operations checked`)
})
