// How many tiles (sparks) one room may hold. The bound is what keeps one layout task bounded: a
// force-directed layout's cost grows faster than its tile count, and its goal (at most 2 s, run off
// the event loop; bench/layout.ts, bench/layout-load.ts) is set for 1,000 tiles, as is every
// measurement of it. A canvas of 1,000 tiles is also far more than one screen shows.
export const MAX_TILES_PER_ROOM = 1000

export const TILE_LIMIT_MESSAGE = `A room holds at most ${MAX_TILES_PER_ROOM} sparks (tiles); delete one before adding another.`
