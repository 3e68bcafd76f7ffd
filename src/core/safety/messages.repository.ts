// All SQL of the users' inboxes (DECISIONS §11).
import type { Selectable } from 'kysely'
import type { Db } from '../../db/database.js'
import type { MessagesTable } from '../../db/schema.js'
import type { PageWindow } from '../pagination.js'

export type MessageRow = Selectable<MessagesTable>

export async function insertMessage (db: Db, message: { id: string, userId: string, kind: string, title: string, body: string, actionId: string | null, link: string | null, now: Date }): Promise<MessageRow> {
  return await db.insertInto('messages').values({
    id: message.id, user_id: message.userId, kind: message.kind, title: message.title, body: message.body, action_id: message.actionId, link: message.link, created_at: message.now
  }).returningAll().executeTakeFirstOrThrow()
}

export async function listMessagesOf (db: Db, userId: string, window: PageWindow): Promise<{ rows: MessageRow[], total: number }> {
  const base = db.selectFrom('messages').where('user_id', '=', userId)
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(window.limit).offset(window.offset).execute(),
    base.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()
  ])
  return { rows, total: Number(count.n) }
}

/** Marks the user's message read (the first time only); undefined when it is not theirs. */
export async function markRead (db: Db, userId: string, id: string, now: Date): Promise<MessageRow | undefined> {
  await db.updateTable('messages').set({ read_at: now }).where('id', '=', id).where('user_id', '=', userId).where('read_at', 'is', null).execute()
  return await db.selectFrom('messages').selectAll().where('id', '=', id).where('user_id', '=', userId).executeTakeFirst()
}

export async function deleteMessage (db: Db, userId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('messages').where('id', '=', id).where('user_id', '=', userId).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}
