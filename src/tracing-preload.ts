// Imported before the server (`node --import ./dist/src/tracing-preload.js`, as `npm start` does)
// so that tracing, when OTEL_EXPORTER_OTLP_ENDPOINT is set, starts before `pg` and `ioredis` are
// loaded (src/infra/tracing.ts). Without the endpoint it loads nothing but the OpenTelemetry API.
import { startTracing, tracingConfigured } from './infra/tracing.js'

if (tracingConfigured()) await startTracing()
