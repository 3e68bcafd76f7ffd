// The health report (SPEC Health report): each part is probed for real and timed.
export type PartStatus = 'healthy' | 'degraded' | 'unhealthy'

export interface HealthPart {
  /** `delayed`: the part works late (live events held back behind an open transaction); the report is degraded. */
  status: PartStatus | 'delayed'
  latency: number
  /** With `delayed`: how late, in ms. */
  lag?: number
  /** With a saturated pool: how long the oldest request has waited for a connection (ms), and how many wait. */
  poolWait?: number
  waiting?: number
}

/** A delayed part's reading. */
export interface Delayed { status: 'delayed', lag: number }

/** The database answers, but requests queue for its pool's connections. */
export interface PoolSaturated { status: 'degraded', poolWait: number, waiting: number }

export interface HealthProbe {
  /** Resolves when the part works; 'degraded' when it works through a fallback; Delayed when it
   *  works late; PoolSaturated when it works but requests wait for its connections. */
  check (): Promise<'healthy' | 'degraded' | Delayed | PoolSaturated>
  /** An unhealthy part that the service can live without makes the report degraded, not unhealthy. */
  essential: boolean
  /** What the part knows in memory, free to read on every request: true when it met trouble since
   *  its last check (a kept report that calls it healthy is then probed again at once). */
  alarm?: () => boolean
}

export interface HealthReport {
  status: PartStatus
  timestamp: string
  services: Record<string, HealthPart>
  uptime?: number
}

const PROBE_TIMEOUT_MS = 2_000

async function probe (check: HealthProbe['check']): Promise<HealthPart> {
  const started = performance.now()
  let timer: NodeJS.Timeout | undefined
  try {
    const reading = await Promise.race([
      check(),
      // The verdict waits for the end of the loop turn in which the timer fires: after the event
      // loop was blocked (by anything), the part's reply may already be waiting to be read, and a
      // busy instance must not be reported as a broken one.
      new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => { setImmediate(() => { reject(new Error('probe timed out')) }) }, PROBE_TIMEOUT_MS)
      })
    ])
    const latency = Math.round((performance.now() - started) * 100) / 100
    if (typeof reading === 'string') return { status: reading, latency }
    return reading.status === 'delayed'
      ? { status: reading.status, latency, lag: reading.lag }
      : { status: reading.status, latency, poolWait: reading.poolWait, waiting: reading.waiting }
  } catch {
    return { status: 'unhealthy', latency: Math.round((performance.now() - started) * 100) / 100 }
  } finally {
    clearTimeout(timer)
  }
}

export async function healthReport (probes: Record<string, HealthProbe>, now: Date, uptimeSeconds?: number): Promise<HealthReport> {
  const names = Object.keys(probes)
  const parts = await Promise.all(names.map(async (name) => await probe(probes[name]!.check)))
  const services: Record<string, HealthPart> = {}
  let status: PartStatus = 'healthy'
  names.forEach((name, i) => {
    const part = parts[i]!
    services[name] = part
    if (part.status === 'unhealthy' && probes[name]!.essential) status = 'unhealthy'
    else if (part.status !== 'healthy' && status === 'healthy') status = 'degraded'
  })
  return { status, timestamp: now.toISOString(), services, ...(uptimeSeconds === undefined ? {} : { uptime: uptimeSeconds }) }
}
