// How deep a free-form JSON value nests (DECISIONS §17: fields that accept any JSON nest at most
// MAX_JSON_DEPTH levels). Measured with an explicit stack, never by recursion: the value is the
// client's, and a 40 KB body of `[[[[…` is 20,000 levels, past what any recursive walk survives.

/** Levels a free-form field (widget settings, a widget's settings schema) may nest. */
export const MAX_JSON_DEPTH = 32

/**
 * True when `value` nests more than `limit` levels: each object or array is one level, the value
 * itself counting as the first (`{}` is 1, `{ a: [] }` is 2, a string is 0). Stops at the first
 * branch past the limit, so the cost is bounded by the value's size, whatever its shape.
 */
export function nestsDeeperThan (value: unknown, limit: number): boolean {
  const pending: Array<{ value: unknown, depth: number }> = [{ value, depth: 0 }]
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (next.value === null || typeof next.value !== 'object') continue
    const depth = next.depth + 1
    if (depth > limit) return true
    const children = Array.isArray(next.value) ? next.value as unknown[] : Object.values(next.value)
    for (const child of children) {
      if (child !== null && typeof child === 'object') pending.push({ value: child, depth })
    }
  }
  return false
}
