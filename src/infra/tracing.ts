// OpenTelemetry tracing, off unless the SDK's own OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set. When on: a span per request (REST and RPC, by
// @fastify/otel, src/http/request-tracing.ts), child spans for Postgres queries and Redis commands
// (the OpenTelemetry pg and ioredis instrumentations) and for storage calls (storage-traced.ts),
// exported over OTLP/HTTP (protobuf) to the endpoint. A caller's W3C `traceparent` is continued;
// nothing outward carries one (no HTTP client is instrumented, pg's SQL comment is off).
//
// The instrumentations patch `pg` and `ioredis` as they are loaded, so tracing must start before
// the app's modules are imported: `npm start` imports tracing-preload.ts first (`--import`), which
// starts it only when the endpoint is set. ioredis is ESM and loaded by `import`, so the patching
// needs import-in-the-middle's synchronous loader hook (`module.registerHooks`, Node ≥ 22.15).
//
// This module itself imports only @opentelemetry/api, which without a registered SDK is a few
// no-op calls: the SDK's packages are loaded by startTracing(), only when tracing is on.
import { trace, isSpanContextValid, SpanStatusCode, type Attributes } from '@opentelemetry/api'
import type { Sampler, SpanExporter } from '@opentelemetry/sdk-trace'
import { packageVersion } from './package-version.js'

type Env = Record<string, string | undefined>

/** Whether the environment asks for traces (the SDK's variables, read the SDK's way). */
export function tracingConfigured (env: Env = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() ?? env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim()
  return endpoint !== undefined && endpoint !== ''
}

/** The trace id of the span active here (the request's, inside a request), for the access line. */
export function currentTraceId (): string | undefined {
  const span = trace.getActiveSpan()
  if (span === undefined) return undefined
  const context = span.spanContext()
  return isSpanContextValid(context) ? context.traceId : undefined
}

interface Running {
  flush (): Promise<void>
  shutdown (): Promise<void>
}

let running: Running | undefined

/** Whether startTracing() ran in this process: the edge installs its request spans only then. */
export function tracingStarted (): boolean {
  return running !== undefined
}

const tracer = trace.getTracer('canvas-api')

/** Runs `work` in a child span named `name` (while tracing is on, inside a request or another
 *  span: background work starts no trace of its own), recording a failure on it. */
export async function traced<T> (name: string, attributes: Attributes, work: () => Promise<T>): Promise<T> {
  if (running === undefined || trace.getActiveSpan() === undefined) return await work()
  return await tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await work()
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) })
      throw error
    } finally {
      span.end()
    }
  })
}

type SamplerKit = Pick<typeof import('@opentelemetry/sdk-trace'), 'AlwaysOnSampler' | 'AlwaysOffSampler' | 'TraceIdRatioBasedSampler' | 'ParentBasedSampler'>

/**
 * The sampler OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG name, with the specification's values
 * (`parentbased_always_on` by default). The 3.x trace SDK no longer reads them itself (only the
 * NodeSDK's configuration package does, which this service does not load).
 */
export function samplerFromEnv (env: Env, kit: SamplerKit): Sampler {
  const name = env.OTEL_TRACES_SAMPLER?.trim().toLowerCase() ?? 'parentbased_always_on'
  const raw = Number(env.OTEL_TRACES_SAMPLER_ARG ?? '1')
  const ratio = Number.isFinite(raw) && raw >= 0 && raw <= 1 ? raw : 1
  switch (name) {
    case 'always_on': return new kit.AlwaysOnSampler()
    case 'always_off': return new kit.AlwaysOffSampler()
    case 'traceidratio': return new kit.TraceIdRatioBasedSampler(ratio)
    case 'parentbased_always_off': return new kit.ParentBasedSampler({ root: new kit.AlwaysOffSampler() })
    case 'parentbased_traceidratio': return new kit.ParentBasedSampler({ root: new kit.TraceIdRatioBasedSampler(ratio) })
    default: return new kit.ParentBasedSampler({ root: new kit.AlwaysOnSampler() })
  }
}

export interface TracingOptions {
  /** Where spans go instead of OTLP, each as it ends (tests pass the SDK's InMemorySpanExporter). */
  exporter?: SpanExporter
}

/**
 * Starts the SDK: context kept across async calls, W3C trace context read from requests, the pg and
 * ioredis instrumentations, spans exported in batches over OTLP (the exporter reads
 * OTEL_EXPORTER_OTLP_* itself; OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name the service;
 * OTEL_TRACES_SAMPLER / _ARG choose how many traces are kept).
 * Call it before `pg` and `ioredis` are first imported. Once per process.
 */
export async function startTracing (options: TracingOptions = {}): Promise<void> {
  if (running !== undefined) return
  const iitm = await import('import-in-the-middle/register-hooks.mjs')
  if (iitm.supportsSyncHooks()) iitm.register({ include: ['ioredis', 'pg', 'pg-pool'] })
  const [api, { AsyncLocalStorageContextManager }, { W3CTraceContextPropagator }, sdk, resources, { registerInstrumentations }, { PgInstrumentation }, { IORedisInstrumentation }] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/instrumentation'),
    import('@opentelemetry/instrumentation-pg'),
    import('@opentelemetry/instrumentation-ioredis')
  ])
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  api.propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  const exporter = options.exporter ?? new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter()
  const resource = resources.defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': 'canvas-api', 'service.version': packageVersion() }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }))
  const provider = new sdk.TracerProvider({
    resource,
    sampler: samplerFromEnv(process.env, sdk),
    spanProcessors: [options.exporter === undefined ? new sdk.BatchSpanProcessor({ exporter }) : new sdk.SimpleSpanProcessor({ exporter })]
  })
  api.trace.setGlobalTracerProvider(provider)
  // Only spans inside a request (or another span): the pool's own connects and the background
  // readers of live/ would otherwise each start a trace of their own.
  registerInstrumentations({
    instrumentations: [new PgInstrumentation({ requireParentSpan: true }), new IORedisInstrumentation({ requireParentSpan: true })]
  })
  running = { flush: async () => { await provider.forceFlush() }, shutdown: async () => { await provider.shutdown() } }
}

/** Sends the spans still buffered (an app closing; others in the process may still trace). */
export async function flushTracing (): Promise<void> {
  await running?.flush()
}

/** Sends the spans still buffered and stops the SDK. */
export async function stopTracing (): Promise<void> {
  const current = running
  running = undefined
  await current?.shutdown()
}
