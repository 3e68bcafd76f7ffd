// Events arrive in the order their transactions began, not committed (issue 28 item 3). Two writers
// of one tile, a single move and a batch, are made to commit in the opposite order of their
// transaction ids: the move begins first and waits (on its mover's membership row, which a second
// connection is inserting), the batch begins later and commits first, then the move commits. The
// stream delivers the move before the batch. A client applying every event as it comes ends on the
// batch's position, which the database does not have; a client that keeps, per tile, the state with
// the highest version (README) ends exactly on the database's state.
// Postgres only: PGlite runs one transaction at a time, so the interleaving cannot happen there.
import t from 'tap'
import pg from 'pg'
import { startApp, uniqueClientIp } from './helpers/app.js'
import { signInPerson } from './helpers/people.js'
import { ofType, openStream, sleep, type SseMessage } from './helpers/sse.js'

interface TileState { tileId: string, x: number, y: number, version: number }

/** What a client holds per tile after applying the position events in the order they arrived. */
function applyEvents (events: readonly SseMessage[], keepHighest: boolean): Map<string, TileState> {
  const tiles = new Map<string, TileState>()
  for (const event of events) {
    const payload = event.json.payload as unknown as { updates?: TileState[], positions?: TileState[] } & TileState
    const states = event.json.type === 'position:updated' ? [payload] : payload.updates ?? payload.positions ?? []
    for (const state of states) {
      const held = tiles.get(state.tileId)
      if (!keepHighest || held === undefined || state.version > held.version) tiles.set(state.tileId, { tileId: state.tileId, x: state.x, y: state.y, version: state.version })
    }
  }
  return tiles
}

if (process.env.DATABASE_URL === undefined) {
  t.plan(0, 'Postgres only (DATABASE_URL is not set): PGlite runs one transaction at a time')
} else {
  const s = await startApp()
  t.teardown(s.close)

  t.test('a move and a batch of one tile, delivered in the opposite order of their commits: the highest version wins, as in the database', async (t) => {
    const owner = await signInPerson(s, 'versions-owner')
    const mover = await signInPerson(s, 'versions-mover')
    const roomId = (await owner.rest('POST', '/api/rooms', { name: 'Interleaved', isPublic: true })).json().data.id as string
    const tileId = (await owner.rest('POST', '/api/sparks', { roomId, title: 'contested', x: 0, y: 0 })).json().data.id as string
    const watcher = await openStream(s.url, { cookie: owner.cookie, headers: { 'x-forwarded-for': uniqueClientIp() } })
    t.teardown(() => { watcher.close() })

    // A second connection inserts the mover's membership of the room and keeps it uncommitted.
    const second = new pg.Client({ connectionString: process.env.DATABASE_URL, application_name: 'versions-test' })
    await second.connect()
    t.teardown(async () => { await second.end().catch(() => {}) })
    await second.query('begin')
    await second.query('insert into room_members (room_id, user_id, joined_at) values ($1, $2, now())', [roomId, mover.userId])

    // The move begins (its transaction takes an id when it locks the room for share), then waits to
    // join the room on that uncommitted row.
    const move = mover.rest('PATCH', '/api/canvas/position', { tileId, x: 400, y: 400 })
    const appName = (await second.query<{ name: string }>("select current_setting('application_name') as name")).rows[0]?.name
    let waiting = 0
    for (let i = 0; i < 200 && waiting === 0; i++) {
      await sleep(20)
      // Inside its open transaction this connection would otherwise read one snapshot of
      // pg_stat_activity for good (taken at the first poll, perhaps before the move reached the insert).
      await second.query('select pg_stat_clear_snapshot()')
      waiting = (await second.query<{ n: number }>(
        "select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query ilike 'insert into \"room_members\"%' and application_name <> $1", [appName])).rows[0]?.n ?? 0
    }
    t.equal(waiting, 1, 'the move waits on the membership row, its transaction already begun')

    // The batch begins after it, moves the tile and commits first.
    const batch = await owner.rest('PATCH', '/api/canvas/positions/batch', { updates: [{ tileId, x: 800, y: 800 }] })
    t.equal(batch.statusCode, 200)
    t.equal(batch.json().data.positions[0].version, 2, 'the batch commits version 2')
    await second.query('rollback')
    const moved = await move
    t.equal(moved.statusCode, 200)
    t.match(moved.json().data, { x: 400, y: 400, version: 3 }, 'the move commits after it: version 3')

    await watcher.waitFor(ofType('positions:batch-updated'))
    await watcher.waitFor(ofType('position:updated'))
    const delivered = watcher.events().filter((m) => ['position:updated', 'positions:batch-updated'].includes(m.json.type ?? ''))
    t.same(delivered.map((m) => m.json.type), ['position:updated', 'positions:batch-updated'], 'delivered move first, batch second: the opposite order of their commits')

    const database = (await owner.rest('GET', `/api/canvas/state?roomId=${roomId}`)).json().data.tiles as TileState[]
    t.same(database, [{ tileId, x: 400, y: 400, version: 3 }], 'the database holds the move, committed last')
    t.same([...applyEvents(delivered, true).values()], database, 'keeping the highest version per tile, the client ends on the database\'s state')
    t.same([...applyEvents(delivered, false).values()], [{ tileId, x: 800, y: 800, version: 2 }], 'applying events as they come, it would end on the batch\'s position')
  })
}
