// Frozen: never edit a migration that has shipped; add a new one.
// Position writes (a move, a batch, a layout of up to 1,000 tiles) change no indexed column of a
// spark, so with free room on its page Postgres updates the row in place of the page (a HOT update:
// no new index entries). Pages filled to the brim leave no room, and every move then writes to all
// three indexes. Half-full pages make a layout's write several times shorter, and a write holds
// every instance's live delivery back for as long as its transaction lasts (src/live/delivery-stall.ts).
// Pages written from now on keep the room; existing ones gain it as vacuum frees their old row versions.
import { sql, type Kysely } from 'kysely'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up (db: Kysely<any>): Promise<void> {
  await sql`alter table sparks set (fillfactor = 50)`.execute(db)
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down (db: Kysely<any>): Promise<void> {
  await sql`alter table sparks reset (fillfactor)`.execute(db)
}
