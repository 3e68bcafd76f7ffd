// Paging for every list (SPEC Limits: page default 1, minimum 1; limit default 20, maximum 100).
// Domains spread `PageFields` into their list-input schemas (REST uses the same schemas for the
// query string, so `limit=101`, `page=0` and `page=abc` fail identically on both transports).
import { Type } from 'typebox'

export const DEFAULT_PAGE_LIMIT = 20
export const MAX_PAGE_LIMIT = 100

/** The RPC field is an int32; REST takes the same bound so an absurd page cannot overflow the offset. */
const MAX_PAGE = 2_147_483_647

export const PageFields = {
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, errorMessage: `must be an integer between 1 and ${MAX_PAGE}` })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_LIMIT, errorMessage: `must be an integer between 1 and ${MAX_PAGE_LIMIT}` }))
}

export interface Pagination {
  page: number
  limit: number
  total: number
  totalPages: number
}

export interface PageWindow {
  page: number
  limit: number
  offset: number
}

/** The page the caller asked for, defaults applied, as a row window. */
export function pageWindow (input: { page?: number, limit?: number }): PageWindow {
  const page = input.page ?? 1
  const limit = input.limit ?? DEFAULT_PAGE_LIMIT
  return { page, limit, offset: (page - 1) * limit }
}

/** `totalPages = ceil(total / limit)`: 0 for an empty list; a page beyond the end is simply empty. */
export function paginationOf (window: { page: number, limit: number }, total: number): Pagination {
  return { page: window.page, limit: window.limit, total, totalPages: Math.ceil(total / window.limit) }
}

export interface Page<T> {
  items: T[]
  pagination: Pagination
}
