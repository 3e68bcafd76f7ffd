// The users' inboxes (DECISIONS §11): service notices — moderation outcomes, appeal decisions, office
// invitations — each announced by `message:created` on the user's own streams.
import type { Actor } from '../actor.js'
import type { Db } from '../../db/database.js'
import type { CoreDeps } from '../deps.js'
import { notFound } from '../errors.js'
import { pageWindow, paginationOf, type Page } from '../pagination.js'
import type { Transaction } from '../transaction.js'
import { parseInput } from '../validation.js'
import { newId } from '../../infra/ids.js'
import * as repo from './messages.repository.js'
import { MessageIdParams, OwnListQuery, toMessage, type Message } from './safety.types.js'

export interface NewMessage {
  userId: string
  kind: string
  title: string
  body: string
  actionId?: string
  /** Where to act on it; stored as written, so never a secret. */
  link?: string
}

/** Writes a message into the user's inbox inside the caller's transaction; the event goes with the commit. */
export async function sendMessage (tx: Transaction, now: Date, message: NewMessage): Promise<Message> {
  const row = await repo.insertMessage(tx.trx, { id: newId('msg'), userId: message.userId, kind: message.kind, title: message.title, body: message.body, actionId: message.actionId ?? null, link: message.link ?? null, now })
  const created = toMessage(row)
  tx.publish('message:created', created, { audience: { kind: 'users', userIds: [message.userId] } })
  return created
}

/** Takes back a message whose cause was undone after its commit (an invitation whose mail failed). */
export async function withdrawMessage (db: Db, userId: string, messageId: string): Promise<void> {
  await repo.deleteMessage(db, userId, messageId)
}

export function createMessages (deps: CoreDeps) {
  const { db, clock } = deps
  return {
    /** The caller's inbox, newest first. */
    async list (actor: Actor, input: unknown): Promise<Page<Message>> {
      const window = pageWindow(parseInput(OwnListQuery, input))
      const { rows, total } = await repo.listMessagesOf(db, actor.userId, window)
      return { items: rows.map(toMessage), pagination: paginationOf(window, total) }
    },

    /** Marks one of the caller's messages read (again: no change); another's is not found. */
    async markRead (actor: Actor, input: unknown): Promise<Message> {
      const { messageId } = parseInput(MessageIdParams, input)
      const row = await repo.markRead(db, actor.userId, messageId, clock.now())
      if (row === undefined) throw notFound('Message')
      return toMessage(row)
    },

    async delete (actor: Actor, input: unknown): Promise<void> {
      const { messageId } = parseInput(MessageIdParams, input)
      if (!await repo.deleteMessage(db, actor.userId, messageId)) throw notFound('Message')
    }
  }
}
