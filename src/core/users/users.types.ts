import type { Selectable } from 'kysely'
import type { UsersTable } from '../../db/schema.js'

export interface User {
  id: string
  email: string
  displayName: string
  avatarUrl: string
  createdAt: string
}

export function toUser (row: Selectable<UsersTable>): User {
  return {
    id: row.id,
    email: row.email,
    displayName: row.display_name,
    avatarUrl: row.avatar_url ?? '',
    createdAt: row.created_at.toISOString()
  }
}
