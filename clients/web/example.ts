// A typed fetch client for the web app, from the generated types (the README's example; type-checked
// with the project, so a route change that breaks it fails CI).
import type { components, paths } from './api.js'

type CreateRoom = paths['/api/rooms']['post']
export type CreateRoomBody = CreateRoom['requestBody']['content']['application/json']
export type CreatedRoom = CreateRoom['responses'][201]['content']['application/json']['data']
export type ApiError = components['schemas']['ErrorEnvelope']

/** Creates a room; a retry with the same key (after a timeout) never creates a second one. */
export async function createRoom (body: CreateRoomBody, idempotencyKey: string = crypto.randomUUID()): Promise<CreatedRoom> {
  const res = await fetch('/api/rooms', {
    method: 'POST',
    credentials: 'include', // the session cookie
    headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
    body: JSON.stringify(body)
  })
  if (!res.ok) throw new Error(((await res.json()) as ApiError).message)
  return ((await res.json()) as { data: CreatedRoom }).data
}
