// Full rooms fast: the tests of the tile limit and of layouts under load need rooms of up to 1,000
// tiles, which one create request at a time would take long to build. Rows are written straight to
// the table, as the create operation writes them.
import { newId } from '../../src/infra/ids.js'
import type { TestApp } from './app.js'

/** Inserts `count` sparks into the room in one statement, the i-th at `place(i)` (by default a
 *  dense patch); returns their ids. */
export async function seedTiles (s: TestApp, roomId: string, createdBy: string, count: number, place = (i: number): { x: number, y: number } => ({ x: (i % 40) * 7, y: Math.floor(i / 40) * 3 })): Promise<string[]> {
  const now = new Date()
  const rows = Array.from({ length: count }, (_, i) => ({
    id: newId('spark'), room_id: roomId, title: `tile ${i}`, content: '', ...place(i), created_by: createdBy, created_at: now, updated_at: now
  }))
  if (rows.length > 0) await s.app.deps.db.insertInto('sparks').values(rows).execute()
  return rows.map((r) => r.id)
}
