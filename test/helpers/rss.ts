// This process's resident memory around a piece of work: what a test that hosts the service in its
// own process reads to show that work done elsewhere (a child process) did not grow it.

export const MiB = 1024 * 1024

/** This process's peak resident size while `work` runs (sampled every 2 ms), above what it was just
 *  before. */
export async function rssGrowth<T> (work: () => Promise<T>): Promise<{ result: T, growth: number }> {
  const before = process.memoryUsage().rss
  let peak = before
  const sampler = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss) }, 2)
  try {
    const result = await work()
    peak = Math.max(peak, process.memoryUsage().rss)
    return { result, growth: peak - before }
  } finally {
    clearInterval(sampler)
  }
}

export const mib = (bytes: number): string => `${(bytes / MiB).toFixed(1)} MiB`
