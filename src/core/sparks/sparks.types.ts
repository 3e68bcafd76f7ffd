// The Spark resource (SPEC Resources: Spark); `version` is its optimistic-concurrency counter.
export interface Spark {
  id: string
  title: string
  content: string
  roomId: string
  x: number
  y: number
  createdBy: string
  createdAt: string
  updatedAt: string
  version: number
}
