// What operators scrape: Prometheus text (prom-client) on METRICS_PORT only, a listener of its own
// that the public port never routes to. Built only when METRICS_PORT is set; otherwise no metric is
// kept and nothing is counted on any request.
//
// Labels stay bounded: operations come from the catalogue (src/core/operations.ts), routes without
// one (health, unknown paths) are `none`; status is a class (2xx…5xx); tiers and answer sources are
// fixed sets. No raw URL, user or address is ever a label.
//
// Pushed as they happen: requests, query errors, compute tasks, uploaded bytes, events delivered.
// Read at scrape time from their owners: rate-limit counts (src/ratelimit/limiter-counts.ts), open
// streams, the outbox's held-back time (src/live/delivery-stall.ts), the Postgres pool, the compute
// queue. prom-client's default process and Node metrics come along.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type pg from 'pg'
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { LimiterCounts } from '../ratelimit/limiter-counts.js'
import type { RequestEnds, RpcOutcome } from './request-end.js'

/** Request durations: from a millisecond read to a long upload or a parse. */
const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

/** What the metrics read when scraped: each part of the service that keeps its own counts. */
export interface MetricSources {
  /** How the limiter's counts were answered, by tier (absent without a limiter). */
  limiterCounts?: Pick<LimiterCounts, 'snapshot'>
  streamsOpen: () => number
  /** How long the first held-back event of the outbox has waited, in ms. */
  heldBackMs: () => number
  pool?: Pick<pg.Pool, 'totalCount' | 'idleCount' | 'waitingCount'>
  computeLoad: () => { running: number, waiting: number }
  /** The /health report as it is answered now (`draining` once the process got SIGTERM). */
  health?: () => Promise<{ status: string, services: Record<string, { status: string }> }>
}

/** What /health may say of the whole instance, and of each part. */
const INSTANCE_STATUSES = ['healthy', 'degraded', 'unhealthy', 'draining']
const PART_STATUSES = ['healthy', 'degraded', 'delayed', 'unhealthy']

export interface Metrics {
  readonly registry: Registry
  /** One request ended (request-end.ts): answered, abandoned (499) or refused by the edge. An RPC
   *  call is classed by its code (`rpc`), not by the HTTP status that carried it. */
  request (operation: string, transport: string, statusCode: number, seconds: number, rpc?: RpcOutcome): void
  rateLimitDecision (tier: string, allowed: boolean): void
  queryError (): void
  computeTask (name: string, seconds: number, outcome: 'ok' | 'failed'): void
  uploadBytes (bytes: number): void
  /** One event handed to this instance's streams, `lagMs` after it was written. */
  eventDelivered (lagMs: number): void
  /** Connects the scrape-time readings (once the parts they read exist). */
  readFrom (sources: MetricSources): void
}

export function createMetrics (): Metrics {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  // `_total` names counters only (the exposition format; `promtool check metrics`): prom-client's
  // default gauges nodejs_active_{handles,requests,resources}_total are dropped — each is the sum
  // of its family without the suffix (by `type`), which stays.
  for (const metric of registry.getMetricsAsArray()) {
    if (metric.name.endsWith('_total') && !(metric instanceof Counter)) registry.removeSingleMetric(metric.name)
  }
  let sources: MetricSources | undefined

  const requests = new Counter({ name: 'canvas_requests_total', help: 'Requests ended (answered, abandoned by the client: 499, refused by the edge), by catalogue operation, transport, status class and, for RPC calls, gRPC/Connect code (the class of an RPC call is its code\'s).', labelNames: ['operation', 'transport', 'status_class', 'code'], registers: [registry] })
  const requestSeconds = new Histogram({ name: 'canvas_request_duration_seconds', help: 'Time from a request\'s arrival to its end, by operation, transport and status class.', labelNames: ['operation', 'transport', 'status_class'], buckets: REQUEST_BUCKETS, registers: [registry] })
  const decisions = new Counter({ name: 'canvas_rate_limit_decisions_total', help: 'Rate-limit decisions by tier: allowed or refused.', labelNames: ['tier', 'decision'], registers: [registry] })
  // Totals kept by the limiter itself (limiter-counts.ts): set from its snapshot at each scrape.
  registry.registerMetric(new Counter({
    name: 'canvas_rate_limit_counts_total',
    help: 'How each rate-limit count was answered, by tier: shared (Redis in time), memory (no Redis configured), late (Redis slower than the tier\'s wait: answered from this instance\'s count), unavailable (Redis failing: answered from this instance\'s count).',
    labelNames: ['tier', 'answered_by'],
    registers: [],
    collect () {
      const snapshot = sources?.limiterCounts?.snapshot() ?? {}
      this.reset()
      for (const [tier, bySource] of Object.entries(snapshot)) {
        for (const [source, count] of Object.entries(bySource)) this.inc({ tier, answered_by: source }, count)
      }
    }
  }))
  registry.registerMetric(new Gauge({ name: 'canvas_event_streams_open', help: 'Event streams (SSE) open on this instance.', registers: [], collect () { this.set(sources?.streamsOpen() ?? 0) } }))
  const delivered = new Counter({ name: 'canvas_events_delivered_total', help: 'Events read from the log and handed to this instance\'s streams.', registers: [registry] })
  const deliveryLag = new Histogram({ name: 'canvas_event_delivery_lag_seconds', help: 'Time from an event\'s write to its delivery by this instance.', buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers: [registry] })
  registry.registerMetric(new Gauge({ name: 'canvas_event_outbox_held_back_seconds', help: 'How long the first event held back by an open transaction has waited (0: none).', registers: [], collect () { this.set((sources?.heldBackMs() ?? 0) / 1000) } }))
  registry.registerMetric(new Gauge({
    name: 'canvas_db_pool_connections',
    help: 'Postgres pool connections by state: total, idle, and requests waiting for one (Postgres only).',
    labelNames: ['state'],
    registers: [],
    collect () {
      const pool = sources?.pool
      if (pool === undefined) return
      this.set({ state: 'total' }, pool.totalCount)
      this.set({ state: 'idle' }, pool.idleCount)
      this.set({ state: 'waiting' }, pool.waitingCount)
    }
  }))
  const queryErrors = new Counter({ name: 'canvas_db_query_errors_total', help: 'Database queries that failed.', registers: [registry] })
  registry.registerMetric(new Gauge({
    name: 'canvas_compute_tasks',
    help: 'Compute pool tasks by state: running on a thread, or waiting for one.',
    labelNames: ['state'],
    registers: [],
    collect () {
      const load = sources?.computeLoad() ?? { running: 0, waiting: 0 }
      this.set({ state: 'running' }, load.running)
      this.set({ state: 'waiting' }, load.waiting)
    }
  }))
  // The health report as a state set: one series per status, 1 for the current one, so an alert can
  // say `degraded for 5 minutes` and a panel which part it is.
  registry.registerMetric(new Gauge({
    name: 'canvas_health_status',
    help: 'The /health report: 1 for the current status, 0 for the others; part="instance" is the whole report (healthy, degraded, unhealthy, draining), the others its parts (healthy, degraded, delayed, unhealthy).',
    labelNames: ['part', 'status'],
    registers: [],
    async collect () {
      const report = await sources?.health?.()
      if (report === undefined) return
      this.reset()
      for (const status of INSTANCE_STATUSES) this.set({ part: 'instance', status }, report.status === status ? 1 : 0)
      for (const [part, { status: current }] of Object.entries(report.services)) {
        for (const status of PART_STATUSES) this.set({ part, status }, current === status ? 1 : 0)
      }
    }
  }))
  const computeSeconds = new Histogram({ name: 'canvas_compute_task_duration_seconds', help: 'Compute tasks from submission (queue wait included) to their end, by kind and outcome.', labelNames: ['task', 'outcome'], buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers: [registry] })
  const uploaded = new Counter({ name: 'canvas_upload_bytes_total', help: 'Bytes of uploaded files stored.', registers: [registry] })
  // Present from the start (at 0), so a dashboard's query has series before the first of each.
  queryErrors.inc(0)
  uploaded.inc(0)
  delivered.inc(0)

  return {
    registry,
    request (operation, transport, statusCode, seconds, rpc) {
      const labels = { operation, transport, status_class: `${Math.floor((rpc?.httpStatus ?? statusCode) / 100)}xx` }
      requests.inc({ ...labels, code: rpc?.code ?? '' })
      requestSeconds.observe(labels, seconds)
    },
    rateLimitDecision (tier, allowed) { decisions.inc({ tier, decision: allowed ? 'allowed' : 'refused' }) },
    queryError () { queryErrors.inc() },
    computeTask (name, seconds, outcome) { computeSeconds.observe({ task: name, outcome }, seconds) },
    uploadBytes (bytes) { uploaded.inc(bytes) },
    eventDelivered (lagMs) {
      delivered.inc()
      deliveryLag.observe(Math.max(0, lagMs) / 1000)
    },
    readFrom (readings) { sources = readings }
  }
}

/** Counts every ended request by its route's operation and transport (`none` for a refusal made
 *  before any request existed). */
export function installRequestMetrics (ends: RequestEnds, metrics: Metrics): void {
  ends.observe(({ request, transport, status, ms, rpc }) => {
    metrics.request(request?.routeOptions.config.operation ?? 'none', transport, status, ms / 1000, rpc)
  })
}

export interface MetricsListener {
  /** The port it listens on (METRICS_PORT, or the one chosen for 0). */
  readonly port: number
  close (): Promise<void>
}

/** `GET /metrics` on its own listener; every other path is 404. */
export async function listenForMetrics (metrics: Metrics, port: number, host: string): Promise<MetricsListener> {
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0]
    if (request.method !== 'GET' || path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('Not found: metrics are at GET /metrics\n')
      return
    }
    metrics.registry.metrics().then((text) => {
      response.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text)
    }, (error: unknown) => {
      response.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics could not be collected: ${error instanceof Error ? error.message : String(error)}\n`)
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => { server.off('error', reject); resolve() })
  })
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => { resolve() }))
    }
  }
}
