// Full shelves fast: the tests of the link limit and of concurrent moves need shelves of up to 500
// links, which one request at a time would take long to build (and the `write` tier allows 100 a
// minute). Rows are written straight to the table, as AddLink writes them, with even keys.
import { evenKeys } from '../../src/core/shelves/ordering.js'
import { newId } from '../../src/infra/ids.js'
import type { TestApp } from './app.js'

/** Appends `count` links to an empty shelf in one statement; returns their ids in order. */
export async function seedLinks (s: TestApp, shelfId: string, count: number, keys: readonly string[] = evenKeys(count)): Promise<string[]> {
  const now = new Date()
  const rows = keys.map((position, i) => ({ id: newId('link'), shelf_id: shelfId, url: `https://example.com/${i}`, title: `link ${i}`, position, created_at: now, updated_at: now }))
  if (rows.length > 0) await s.app.deps.db.insertInto('shelf_links').values(rows).execute()
  return rows.map((r) => r.id)
}
