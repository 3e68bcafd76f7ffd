// The Room resource as both transports return it (SPEC Resources: Room).
export interface Room {
  id: string
  name: string
  description?: string
  isPublic: boolean
  createdBy: string
  createdAt: string
  updatedAt: string
}
