// The audit log is append-only by privilege, not only by trigger (issue 38 item 7, DECISIONS §17):
// on Postgres the service runs as a role that does not own the tables. In a database of its own, with
// two roles of its own (dropped at the end), this test runs `npm run migrate` as the owner
// (DATABASE_OWNER_URL) with DATABASE_URL naming the service's role, then proves that role may INSERT
// and SELECT the audit table and can neither UPDATE, DELETE, TRUNCATE it nor disable its trigger —
// and that the whole service works as that role (sign-in, rooms, sparks, an event stream, an audited
// admin action, a retention run) without ever trying to migrate (before `npm run migrate` it refuses to start, saying why).
import t from 'tap'
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { pruneExpiredRows } from '../src/core/retention/retention.js'
import { startApp } from './helpers/app.js'
import { createScratchDatabase } from './helpers/scratch-database.js'
import { startOidcProvider } from './helpers/oidc-provider.js'
import { signInPerson } from './helpers/people.js'
import { ofType, openStream } from './helpers/sse.js'

const superuserUrl = process.env.DATABASE_URL
if (superuserUrl === undefined) {
  t.pass('skipped: roles and grants exist on Postgres only (set DATABASE_URL); the embedded database keeps the trigger and one role')
} else {
  const suffix = randomBytes(4).toString('hex')
  const owner = `canvas_owner_${suffix}`
  const service = `canvas_app_${suffix}`
  const scratch = await createScratchDatabase(superuserUrl, 'canvas_roles', { owner: await createRoles() })
  const urlAs = (user: string): string => scratch.urlAs(user)
  t.teardown(async () => {
    await scratch.drop()
    await scratch.superuser(`drop role if exists ${service}`)
    await scratch.superuser(`drop role if exists ${owner}`)
  })

  /** The two roles, before the database their owner owns. */
  async function createRoles (): Promise<string> {
    const client = new pg.Client({ connectionString: superuserUrl })
    await client.connect()
    try {
      await client.query(`create role ${owner} login`)
      await client.query(`create role ${service} login`)
    } finally { await client.end() }
    return owner
  }

  /** `npm run migrate` (its entry point, without the build) with the two URLs. */
  async function migrate (): Promise<{ code: number | null, output: string }> {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/db/migrate-cli.ts'], {
      env: { ...process.env, DATABASE_URL: urlAs(service), DATABASE_OWNER_URL: urlAs(owner), LOG_LEVEL: 'silent' }
    })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
    child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve))
    return { code, output }
  }

  const provider = await startOidcProvider()
  t.teardown(provider.close)
  const serviceEnv = { DATABASE_URL: urlAs(service), OIDC_ISSUER: provider.issuer, OIDC_AUDIENCE: provider.audience }

  t.test('before `npm run migrate` the service, as a role that cannot migrate, refuses to start and says why', async (t) => {
    const error = await startApp(serviceEnv).then(async (s) => { await s.close(); return undefined }, (e: unknown) => e as Error)
    t.ok(error !== undefined, 'it did not start')
    t.match(error?.message, /npm run migrate/, error?.message ?? '')
    t.match(error?.message, new RegExp(service))
  })

  t.test('`npm run migrate` as the owner grants the service role, again and again', async (t) => {
    for (const run of ['first', 'second']) {
      const { code, output } = await migrate()
      t.equal(code, 0, `${run} run: ${output}`)
      t.match(output, new RegExp(`${service} granted`), `${run} run: granted`)
    }
  })

  t.test('as the service role: INSERT and SELECT the audit log; UPDATE, DELETE, TRUNCATE and DISABLE TRIGGER fail', async (t) => {
    const client = new pg.Client({ connectionString: urlAs(service) })
    await client.connect()
    t.teardown(async () => { await client.end() })
    await client.query(`insert into admin_audit_log (id, at, actor_sub, action, outcome, details, request_id, client_ip)
      values ('audit_${suffix}', now(), 'sub', 'test.insert', 'permitted', '{}', 'req', '127.0.0.1')`)
    t.equal((await client.query('select count(*)::int as n from admin_audit_log where id = $1', [`audit_${suffix}`])).rows[0].n, 1, 'INSERT and SELECT work')
    const refused = [
      'update admin_audit_log set action = \'rewritten\'',
      'delete from admin_audit_log',
      'truncate admin_audit_log',
      'alter table admin_audit_log disable trigger admin_audit_log_no_update_or_delete',
      'alter table admin_audit_log disable trigger all',
      'drop trigger admin_audit_log_no_update_or_delete on admin_audit_log',
      'drop table admin_audit_log',
      'update kysely_migration set name = name'
    ]
    for (const statement of refused) {
      const error = await client.query(statement).then(() => undefined, (e: { code?: string, message: string }) => e)
      t.ok(error !== undefined, `refused: ${statement}`)
      t.ok(error?.code === '42501', `${statement}: ${error?.code ?? ''} ${error?.message ?? ''}`)
    }
    t.equal((await client.query('select count(*)::int as n from admin_audit_log where id = $1 and action = \'test.insert\'', [`audit_${suffix}`])).rows[0].n, 1, 'the row is unchanged')
    await client.query('grant update on admin_audit_log to public') // a warning, not an error: it grants nothing
    for (const privilege of ['UPDATE', 'DELETE', 'TRUNCATE', 'TRIGGER', 'REFERENCES']) {
      const held = await client.query('select has_table_privilege(current_user, \'admin_audit_log\', $1) as held', [privilege])
      t.equal(held.rows[0].held, false, `no ${privilege} on the audit log, not even through PUBLIC`)
    }
    const owned = await client.query('select count(*)::int as n from pg_tables where schemaname = current_schema() and tableowner = current_user')
    t.equal(owned.rows[0].n, 0, 'the service role owns no table')
  })

  t.test('the whole service works as the service role', async (t) => {
    const s = await startApp(serviceEnv)
    t.teardown(s.close)
    const alice = await signInPerson(s, 'roles-alice')
    const bob = await signInPerson(s, 'roles-bob')
    const room = await alice.rest('POST', '/api/rooms', { name: 'Least privilege', isPublic: true })
    t.equal(room.statusCode, 201, room.body)
    const roomId = room.json().data.id as string
    t.equal((await bob.rest('GET', `/api/sparks?roomId=${roomId}`)).statusCode, 200, 'bob joins by reading')
    const stream = await openStream(s.url, { cookie: bob.cookie })
    t.teardown(() => { stream.close() })
    const spark = await alice.rest('POST', '/api/sparks', { roomId, title: 'Hello', content: 'as canvas_app', x: 0, y: 0 })
    t.equal(spark.statusCode, 201, spark.body)
    await stream.waitFor(ofType('spark:created'))
    t.equal((await alice.rest('PATCH', `/api/sparks/${spark.json().data.id as string}`, { title: 'Changed' })).statusCode, 200)
    t.equal((await alice.rest('POST', '/api/auth/logout')).statusCode < 300, true, 'logout revokes the session')

    const token = await provider.sign({ sub: `roles-admin-${suffix}`, roles: ['super_admin'] })
    const admin = async (method: 'GET' | 'POST', url: string, payload?: object) => await s.app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload === undefined ? {} : { payload }) })
    const widget = await admin('POST', '/api/admin/widgets', { name: 'Audited', settingsSchema: { type: 'object' } })
    t.equal(widget.statusCode, 201, widget.body)
    const audit = await admin('GET', `/api/admin/audit?targetId=${widget.json().data.id as string}`)
    t.match(audit.json().data, [{ action: 'admin.createWidget', outcome: 'permitted' }], 'the action wrote its audit row')
    const pruned = await pruneExpiredRows(s.app.deps)
    t.ok(pruned.rules.some((r) => r.name.startsWith('sessions:') && r.removed >= 1), 'retention prunes as the service role (the logged-out session)')
  })
}
