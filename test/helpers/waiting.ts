// Waiting for an item to be recorded (an event, a log line): the first at index `from` or later of
// `list` that matches, now or once a recorder wakes the waiters; rejects after `timeoutMs`.
export async function waitForItem<T> (list: readonly T[], waiters: Set<() => void>, match: (item: T) => boolean, from: number, timeoutMs: number, what: () => string): Promise<T> {
  const find = (): T | undefined => list.slice(from).find(match)
  const found = find()
  if (found !== undefined) return found
  return await new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => { waiters.delete(check); reject(new Error(`timed out waiting for ${what()}`)) }, timeoutMs)
    function check (): void {
      const hit = find()
      if (hit === undefined) return
      clearTimeout(timer)
      waiters.delete(check)
      resolve(hit)
    }
    waiters.add(check)
  })
}
